/**
 * One destination that hangs (accepts, never answers) and one that refuses connections, each
 * with a backlog, must not stop deliveries to a healthy destination: its publish→arrival p99
 * stays within 2× of an unloaded run (see docs/configuration.md#fairness-between-destinations;
 * NOISE_MS below).
 * The issue measured 10,000 waiting messages per bad destination; this test uses smaller
 * backlogs (so it runs in seconds) with the default `--concurrency` of 256, its default
 * per-origin cap of 64 and the default `--origin-failure-rate` of 50 per second;
 * scripts/fairness.mjs runs the 10,000 case.
 */
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { startFerry, STORAGES, type TestFerry } from './helpers/ferry.js';
import { stretchByLoad } from './helpers/load.js';
import { startReceiver, type Receiver } from './helpers/receiver.js';

const BACKLOG = 200;
/**
 * Refused messages: at the engine's full pace, attempting them all takes long enough (about a
 * second on a quiet machine) that healthy messages published right after would wait for it.
 */
const REFUSED_BACKLOG = 1_000;
const ORIGIN_CAP = 64; // a quarter of the default --concurrency
const FAILURE_RATE = 50; // the default --origin-failure-rate
/** Failed attempts that make an origin paced, plus the pace's burst (engine.ts). */
const PACE_START = 10 + 10;
/**
 * Healthy messages per measurement: with 100 the p99 is the second slowest, so a single stall of
 * the shared machine (one ~300 ms pause of PostgreSQL after the suite's other files, seen once in
 * six runs) does not decide it; with 30 the p99 was the slowest of all.
 */
const HEALTHY = 100;
/**
 * Added to 2× the unloaded p99: the machine running the suite is shared and its p99 of a few
 * dozen publishes swings by hundreds of ms from one run to the next, more on a loaded machine
 * (so it is stretched by the load per core: a PostgreSQL run within the full suite once read
 * 384 ms against a bound of 288). Before the fix the healthy messages did not arrive at all.
 * scripts/fairness.mjs measures the plain 2× at full scale.
 */
const NOISE_MS = 250;

/** A URL on 127.0.0.1 where nothing listens: connections are refused. */
async function refusingUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return `http://127.0.0.1:${port}`;
}

describe.each(STORAGES)('fairness between destinations (%s)', (storage) => {
  let t: TestFerry | undefined;
  const receivers: Receiver[] = [];

  afterEach(async () => {
    // Receivers first: the hanging one's open requests then fail, so shutdown need not wait.
    await Promise.all(receivers.splice(0).map((r) => r.close()));
    await t?.close();
    t = undefined;
  });

  async function batch(destination: string, count: number): Promise<string[]> {
    const ids: string[] = [];
    for (let sent = 0; sent < count; sent += 500) {
      const entries = Array.from({ length: Math.min(500, count - sent) }, () => ({
        destination,
        body: 'x',
      }));
      const res = await t!.api('/v2/batch', { method: 'POST', body: JSON.stringify(entries) });
      expect(res.status).toBe(200);
      ids.push(...((await res.json()) as { messageId: string }[]).map((r) => r.messageId));
    }
    return ids;
  }

  /** Publishes `count` messages to `dest`, one every 10 ms; returns the p99 publish→arrival. */
  async function healthyP99(dest: Receiver, count: number): Promise<number> {
    const sorted = (await latencies(dest, count, 10_000)).sort((a, b) => a - b);
    return sorted[Math.ceil(sorted.length * 0.99) - 1] ?? NaN;
  }

  /** Resolves once the message has had an attempt and waits for its retry. */
  async function waitRetried(id: string, deadlineMs: number): Promise<void> {
    const until = Date.now() + deadlineMs;
    for (;;) {
      const res = await t!.api(`/v2/events?messageId=${id}&state=RETRY`);
      const { events } = (await res.json()) as { events: unknown[] };
      if (events.length > 0) return;
      if (Date.now() > until) throw new Error(`${id} was not attempted in ${deadlineMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 50)); // polling the recorded events
    }
  }

  /** RETRY events of messages to `url`: attempts made (each one counted). */
  async function retries(url: string): Promise<number> {
    let n = 0;
    let cursor = '';
    do {
      const query = `url=${encodeURIComponent(url)}&state=RETRY&count=1000&cursor=${cursor}`;
      const res = await t!.api(`/v2/events?${query}`);
      expect(res.status).toBe(200);
      const page = (await res.json()) as { events: unknown[]; cursor?: string };
      n += page.events.length;
      cursor = page.cursor ?? '';
    } while (cursor !== '');
    return n;
  }

  it('keeps a healthy destination near its unloaded p99 while bad ones hold backlogs', async () => {
    t = await startFerry({ storage });
    const healthy = await startReceiver(() => ({ status: 200 }));
    const hanging = await startReceiver(() => ({ hang: true }));
    receivers.push(healthy, hanging);
    await healthyP99(healthy, 5); // warm-up: connections, statements
    const unloaded = await healthyP99(healthy, HEALTHY);

    await batch(`${hanging.url}/h`, BACKLOG);
    await hanging.waitFor(ORIGIN_CAP, 10_000);
    const refusedUrl = `${await refusingUrl()}/r`;
    const started = Date.now();
    const refused = await batch(refusedUrl, REFUSED_BACKLOG);
    // Right away, while nearly all of the refused backlog is due: before the fix every one of
    // them was attempted (and rescheduled) ahead of the healthy messages published after them.
    const loaded = await healthyP99(healthy, HEALTHY);

    expect(loaded).toBeLessThanOrEqual(2 * unloaded + stretchByLoad(NOISE_MS));
    // The refused destination's attempts are paced, not stopped: the first messages were
    // attempted (a counted retry each), and no more than the pace allows since.
    await waitRetried(refused[0] ?? '', 10_000);
    const attempts = await retries(refusedUrl);
    const seconds = (Date.now() - started) / 1000;
    expect(attempts).toBeGreaterThan(0);
    expect(attempts).toBeLessThanOrEqual(ORIGIN_CAP + PACE_START + FAILURE_RATE * (seconds + 1));
    expect(hanging.requests.length).toBe(ORIGIN_CAP); // its cap, never more
  });

  /** Publishes `count` messages to `dest`, 20 ms apart; returns each one's publish→arrival. */
  async function latencies(dest: Receiver, count: number, deadlineMs: number): Promise<number[]> {
    const before = dest.requests.length;
    const sentAt = new Map<string, number>();
    for (let i = 0; i < count; i++) {
      const path = `/l/${before + i}`;
      sentAt.set(path, Date.now());
      const res = await t!.api(`/v2/publish/${dest.url}${path}`, { method: 'POST', body: 'l' });
      expect(res.status).toBe(200);
      await new Promise((resolve) => setTimeout(resolve, 10)); // the publishing pace
    }
    const arrived = (await dest.waitFor(before + count, deadlineMs)).slice(before);
    return arrived.map((r) => r.at - (sentAt.get(r.path) ?? NaN));
  }

  // Before the fix, the hanging destination's messages claimed beyond its cap waited in the
  // engine for its slots, each holding one of the 256 engine slots, until it counted as stalled
  // (--origin-stall, 30 s here): nothing behind its backlog was claimed meanwhile.
  it("claims past a hanging destination's backlog long before it counts as stalled", async () => {
    t = await startFerry({ storage, args: ['--origin-stall', '30s'] });
    const healthy = await startReceiver(() => ({ status: 200 }));
    const hanging = await startReceiver(() => ({ hang: true }));
    receivers.push(healthy, hanging);
    await latencies(healthy, 3, 10_000); // warm-up
    await batch(`${hanging.url}/h`, 1_000);
    await hanging.waitFor(ORIGIN_CAP, 10_000);
    const waited = await latencies(healthy, 10, 10_000);
    expect(Math.max(...waited)).toBeLessThan(3_000);
    expect(hanging.requests.length).toBe(ORIGIN_CAP);
  });

  // A destination that answers, slowly (250 ms), with a backlog: its slots stay full (it drains
  // at its cap's pace, claimed a free slot's worth at a time) while the engine's other slots stay
  // free for other destinations. Before the fix its waiting messages held every engine slot
  // (it never counted as stalled), so the healthy messages waited for its whole backlog.
  it('keeps a slow destination at its cap without holding the other destinations back', async () => {
    const cap = 4;
    const slowMs = 250;
    const backlog = 120;
    t = await startFerry({
      storage,
      args: ['--concurrency', '16', '--origin-concurrency', String(cap), '--origin-stall', '30s'],
    });
    let open = 0;
    let most = 0;
    const healthy = await startReceiver(() => ({ status: 200 }));
    const slow = await startReceiver(async () => {
      most = Math.max(most, ++open);
      await new Promise((resolve) => setTimeout(resolve, slowMs)); // the destination's own pace
      open -= 1;
      return { status: 200 };
    });
    receivers.push(healthy, slow);
    await latencies(healthy, 3, 10_000); // warm-up
    await batch(`${slow.url}/s`, backlog);
    await slow.waitFor(cap, 10_000);
    const waited = await latencies(healthy, 10, 10_000);
    expect(Math.max(...waited)).toBeLessThan(2_000);
    const arrived = await slow.waitFor(backlog, 60_000);
    const drainMs = arrived[backlog - 1]!.at - arrived[0]!.at;
    const ideal = ((backlog - cap) / cap) * slowMs; // last start after the first, at its cap
    expect(most).toBeLessThanOrEqual(cap);
    // Claimed a slot's worth at a time, it still keeps near its cap's pace (a claim per
    // answer costs milliseconds; the slack is for a loaded machine).
    expect(drainMs).toBeLessThan(ideal * 1.5 + 1_000);
  });

  // A message published to a destination that is paced (its last 10 attempts failed) goes into
  // storage at its place in the destination's schedule. Before, it was stored due at once, so
  // the next claim took it only to hand it back into the schedule (an ACTIVE event and a
  // release), and until then every claim read past it and the rest of that destination's
  // newly published messages.
  it("stores a message to a paced destination at its place in the destination's schedule", async () => {
    const ferry = await startFerry({ storage });
    t = ferry;
    const refusedUrl = `${await refusingUrl()}/r`;
    // 480 of them beyond the pace's start: about 9.6 s of schedule, so the message published
    // below lands well past its first second however long the wait for the pacing takes.
    await batch(refusedUrl, 500);
    const deadline = Date.now() + 10_000;
    while ((await retries(refusedUrl)) < 10) {
      if (Date.now() > deadline) throw new Error('the refused destination was not attempted');
      await new Promise((resolve) => setTimeout(resolve, 50)); // polling the recorded events
    }
    const publishedCount = async (): Promise<number> => {
      const text = await (await fetch(`${ferry.url}/metrics`)).text();
      const lines = text.split('\n').filter((l) => l.startsWith('ferry_messages_published_total{'));
      return lines.reduce((sum, line) => sum + Number(line.split(' ').at(-1)), 0);
    };
    const countedBefore = await publishedCount();
    const publishedAt = Date.now();
    const [id] = await batch(refusedUrl, 1);
    // Stored as a copy due later, and still counted as published.
    expect(await publishedCount()).toBe(countedBefore + 1);
    const stored = await t.ferry.driver.executor.messageGet({
      accountId: t.account.id,
      id: id ?? '',
    });
    // Behind the schedule's first second, and not leased (a claim would make it due at the end
    // of its 30 s lease).
    expect(stored?.dueAt).toBeGreaterThan(publishedAt + 1_000);
    expect(stored?.dueAt).toBeLessThan(publishedAt + 20_000);
    const res = await t.api(`/v2/events?messageId=${id ?? ''}`);
    const { events } = (await res.json()) as { events: { state: string }[] };
    expect(events.map((e) => e.state)).toEqual(['CREATED']);
  });
});
