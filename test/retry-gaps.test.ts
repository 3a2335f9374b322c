/**
 * Retry timing with the real started engine and the real clock: the gap between attempts,
 * measured at the destination, is the retry delay, also when nothing else happens on the
 * server (the engine used to sleep until the due time it had read before the retry was written,
 * up to 5 s). Waits on recorded requests with deadlines; a few short gaps per storage.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createFerry, type Ferry } from '../src/app.js';
import { systemClock } from '../src/core/clock.js';
import { silentLogger } from '../src/core/logger.js';
import { openPostgresDriver } from '../src/storage/postgres/postgres-driver.js';
import { pgUrl, startFerry, startSecondNode, STORAGES, type TestFerry } from './helpers/ferry.js';
import { startReceiver, type Receiver } from './helpers/receiver.js';

/** The gap between requests `i - 1` and `i`, ms. */
function gap(dest: Receiver, i: number): number {
  return (dest.requests[i]?.at ?? NaN) - (dest.requests[i - 1]?.at ?? NaN);
}

/** Allowed deviation of a measured gap from the retry delay (the issue's ± 250 ms). */
const SLACK_MS = 250;

/** A gap measured at a destination, the delay it should be, and the message it belongs to. */
interface Gap {
  what: string;
  measured: number;
  expected: number;
  /** Where the time went, from the message's events (read only for a miss). */
  explain: () => Promise<string>;
}

const missed = (g: Gap): boolean => !(Math.abs(g.measured - g.expected) <= SLACK_MS);

/**
 * Runs `measure` and expects every gap within the slack. A miss is printed with where its time
 * went and measured once more, with new messages, before the test fails: the wiring faults this
 * file is about (a retry waiting for the 5 s idle sleep or for an unrelated wake-up) miss every
 * time, while a shared machine can stall a process once (a CI run on 2026-11-28 saw a 300 ms
 * retry after 582 ms; never reproduced here, not even beside two busy loops).
 */
async function expectGaps(measure: () => Promise<Gap[]>): Promise<void> {
  for (let round = 1; ; round++) {
    const gaps = await measure();
    const misses = gaps.filter(missed);
    if (misses.length === 0) return;
    const lines = await Promise.all(
      misses.map(
        async (g) => `${g.what}: ${g.measured} ms, not ${g.expected}; ${await g.explain()}`,
      ),
    );
    if (round === 2) expect.fail(lines.join('\n'));
    console.warn(`retry gap missed, measuring again:\n${lines.join('\n')}`);
  }
}

describe.each(STORAGES)('retry gaps on an idle server (%s)', (storage) => {
  let t: TestFerry | undefined;
  const receivers: Receiver[] = [];

  afterEach(async () => {
    await t?.close();
    t = undefined;
    await Promise.all(receivers.splice(0).map((r) => r.close()));
  });

  async function receiver(respond: Parameters<typeof startReceiver>[0]): Promise<Receiver> {
    const r = await startReceiver(respond);
    receivers.push(r);
    return r;
  }

  /** Publishes and returns the message's id. */
  async function publish(url: string, headers: Record<string, string>): Promise<string> {
    const res = await t!.api(`/v2/publish/${url}`, { method: 'POST', body: 'x', headers });
    expect(res.status).toBe(200);
    return ((await res.json()) as { messageId: string }).messageId;
  }

  /**
   * The gap between the arrivals `i - 1` and `i` at `dest`, explained (for a miss) by the
   * message's events: when the failed attempt's outcome was written and for when it planned the
   * retry, when the retry was claimed and when it was delivered, from the earlier arrival.
   */
  function measured(what: string, dest: Receiver, i: number, messageId: string, expected: number) {
    const from = dest.requests[i - 1]?.at ?? NaN;
    const explain = async (): Promise<string> => {
      type Event = { time: number; state: string; nextDeliveryTime?: number };
      // The later attempt's ACTIVE event is written with its outcome: wait for it (up to 2 s).
      let events: Event[] = [];
      for (const deadline = Date.now() + 2_000; Date.now() < deadline;) {
        const res = await t!.api(`/v2/events?messageId=${messageId}`);
        events = ((await res.json()) as { events: Event[] }).events.reverse();
        if (events.filter((e) => e.state === 'ACTIVE').length > i) break;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const steps = events.map(
        (e) =>
          `${e.state} ${e.time - from}${e.nextDeliveryTime ? ` (next ${e.nextDeliveryTime - from})` : ''}`,
      );
      return `events, ms from the earlier arrival: ${steps.join(', ')}`;
    };
    return { what, measured: gap(dest, i), expected, explain };
  }

  it('retries 1 s and 300 ms after a failed attempt, as the delay says', async () => {
    t = await startFerry({ storage });
    await expectGaps(async () => {
      const failOnce = (_: unknown, i: number) => ({ status: i === 0 ? 500 : 200 });
      const slow = await receiver(failOnce);
      const fast = await receiver(failOnce);
      const a = await publish(`${slow.url}/a`, { 'Svc-Retry-Delay': '1000' });
      const b = await publish(`${fast.url}/b`, { 'Svc-Retry-Delay': '300' });
      await Promise.all([slow.waitFor(2, 4_000), fast.waitFor(2, 4_000)]);
      return [measured('300 ms retry', fast, 1, b, 300), measured('1 s retry', slow, 1, a, 1_000)];
    });
  });

  it('retries right after a 1 s Svc-Timeout', async () => {
    t = await startFerry({ storage });
    await expectGaps(async () => {
      const dest = await receiver((_, i) => (i === 0 ? { hang: true } : { status: 200 }));
      const id = await publish(`${dest.url}/t`, { 'Svc-Timeout': '1s', 'Svc-Retry-Delay': '0' });
      await dest.waitFor(2, 4_000);
      return [measured('retry after a timeout', dest, 1, id, 1_000)];
    });
  });

  it("makes a callback's retries promptly (2 retries, 100 ms apart)", async () => {
    t = await startFerry({ storage });
    await expectGaps(async () => {
      const dest = await receiver(() => ({ status: 200 }));
      const callback = await receiver(() => ({ status: 500 }));
      await publish(`${dest.url}/c`, {
        'Svc-Callback': `${callback.url}/cb`,
        'Svc-Callback-Retries': '2',
        'Svc-Callback-Retry-Delay': '100',
      });
      await callback.waitFor(3, 3_000);
      // The callback is a message of its own; its id comes in the request's headers.
      const id = String(callback.requests[0]?.headers['svc-message-id'] ?? '');
      return [
        measured("callback's first retry", callback, 1, id, 100),
        measured("callback's second retry", callback, 2, id, 100),
      ];
    });
  });
});

describe.skipIf(!pgUrl)('retry gaps across PostgreSQL nodes', () => {
  let t: TestFerry | undefined;
  let other: Ferry | undefined;
  let dest: Receiver | undefined;

  afterEach(async () => {
    await other?.stop();
    await t?.close();
    await dest?.close();
  });

  it('delivers at once what a node without an engine accepts: its NOTIFY wakes the worker', async () => {
    t = await startFerry({ storage: 'postgres' });
    dest = await startReceiver(() => ({ status: 200 }));
    // An API-only node: it takes publishes and claims nothing, so it must wake the worker. (A
    // node whose engine has room claims a message due now itself and wakes nobody.)
    other = await startSecondNode(t, systemClock);
    const api = other.url;
    for (let i = 1; i <= 2; i++) {
      const sentAt = Date.now();
      const res = await fetch(`${api}/v2/publish/${dest.url}/api-${i}`, {
        method: 'POST',
        body: 'x',
        headers: { authorization: `Bearer ${t.token}` },
      });
      expect(res.status).toBe(200);
      // The worker's idle sleep is 5 s; only a wake-up brings the message sooner. The second
      // message is published right after the worker's claim of the first, so its timer is
      // far from firing.
      const arrived = await dest.waitFor(i, 4_000);
      expect((arrived[i - 1]?.at ?? NaN) - sentAt).toBeLessThan(1_000);
    }
  });

  it("wakes another node for a retry this node's engine will not take", async () => {
    t = await startFerry({ storage: 'postgres' });
    let answer: () => void = () => {};
    const answered = new Promise<void>((resolve) => (answer = resolve));
    dest = await startReceiver(async (_, i) => {
      if (i === 0) await answered;
      return { status: i === 0 ? 500 : 200 };
    });
    const res = await t.api(`/v2/publish/${dest.url}/n`, {
      method: 'POST',
      body: 'x',
      headers: { 'Svc-Retry-Delay': '1000' },
    });
    expect(res.status).toBe(200);
    await dest.waitFor(1, 4_000); // the first node's engine made the first attempt
    // The other node starts idle: the message is leased, so it plans its next claim for later.
    other = await createFerry({
      // No delivery thread: its start-up on the first send would be part of the measured gap.
      config: { ...t.config, port: 0, roles: ['worker'], deliveryThread: false },
      logger: silentLogger,
      driver: openPostgresDriver({ url: pgUrl ?? '', schema: t.schema ?? '' }),
    });
    await other.start();
    const answeredAt = Date.now(); // the first attempt fails now: the retry is due 1 s later
    answer();
    // The first node writes the retry (stop drains the outcome) and claims nothing more; only
    // the other node can make the second attempt, when the first node's NOTIFY wakes it.
    await t.ferry.engine.stop();
    const [, second] = await dest.waitFor(2, 4_000);
    expect(Math.abs((second?.at ?? NaN) - answeredAt - 1_000)).toBeLessThanOrEqual(SLACK_MS);
  });
});
