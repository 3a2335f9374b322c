/**
 * Where a message stands (`state` of `GET /v2/messages/{id}` and of the list): being delivered,
 * held by its flow-control key, waiting for a retry until the time storage holds, delayed, due.
 * A real engine and real receivers, both storages.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/core/clock.js';
import { STORAGES, startFerry, type TestFerry } from './helpers/ferry.js';
import { startReceiver, type Receiver } from './helpers/receiver.js';

interface MessageJson {
  messageId: string;
  state?: string;
  nextDeliveryTime?: number;
  notBefore: number;
}

/** Resolves with `read()`'s value once it is not undefined; fails after `ms`. */
async function eventually<T>(read: () => Promise<T | undefined>, ms = 10_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe.each(STORAGES)('on %s', (storage) => {
  let t: TestFerry;
  let dest: Receiver;
  let release: () => void = () => undefined;

  beforeEach(async () => {
    const held = new Promise<void>((resolve) => (release = resolve));
    dest = await startReceiver(async (req) => {
      if (req.path === '/held') await held;
      return { status: req.path === '/fail' ? 500 : 200 };
    });
    t = await startFerry({ storage });
  });
  afterEach(async () => {
    release();
    await t.close();
    await dest.close();
  });

  const publish = async (path: string, headers: Record<string, string> = {}): Promise<string> => {
    const res = await t.api(`/v2/publish/${dest.url}${path}`, { method: 'POST', headers });
    expect(res.status).toBe(200);
    return ((await res.json()) as { messageId: string }).messageId;
  };
  const get = async (id: string): Promise<MessageJson> => {
    const res = await t.api(`/v2/messages/${id}`);
    expect(res.status).toBe(200);
    return (await res.json()) as MessageJson;
  };

  it('tells an attempt in flight, a key holding a message, a retry and a delay apart', async () => {
    const keyed = {
      'Svc-Flow-Control-Key': 'one-at-a-time',
      'Svc-Flow-Control-Value': 'parallelism=1',
    };
    const first = await publish('/held', keyed);
    await dest.waitFor(1);
    const second = await publish('/held', keyed);
    const failing = await publish('/fail', { 'Svc-Retries': '2', 'Svc-Retry-Delay': '3600000' });
    const delayed = await publish('/later', { 'Svc-Delay': '1h' });

    expect(await get(first)).toMatchObject({ state: 'ACTIVE' });
    expect((await get(first)).nextDeliveryTime).toBeUndefined();
    expect(await get(second)).toMatchObject({ state: 'WAITING' });
    const later = await get(delayed);
    expect(later).toMatchObject({ state: 'DELAYED', nextDeliveryTime: later.notBefore });

    // The failed attempt's RETRY event names the time; the message reads it back from storage.
    const retryAt = await eventually(async () => {
      const res = await t.api(`/v2/events?messageId=${failing}&state=RETRY`);
      const { events } = (await res.json()) as { events: { nextDeliveryTime: number }[] };
      return events[0]?.nextDeliveryTime;
    });
    expect(retryAt).toBeGreaterThan(Date.now() + 50 * 60_000);
    expect(await get(failing)).toMatchObject({ state: 'DELAYED', nextDeliveryTime: retryAt });

    const list = await t.api('/v2/messages');
    const { messages } = (await list.json()) as { messages: MessageJson[] };
    const states = Object.fromEntries(messages.map((m) => [m.messageId, m.state]));
    expect(states).toEqual({
      [first]: 'ACTIVE',
      [second]: 'WAITING',
      [failing]: 'DELAYED',
      [delayed]: 'DELAYED',
    });

    // Listed by state (repeatable), and a state the API does not know is a 400 naming it.
    const listed = async (query: string): Promise<string[]> => {
      const res = await t.api(`/v2/messages?${query}`);
      expect(res.status).toBe(200);
      return ((await res.json()) as { messages: MessageJson[] }).messages.map((m) => m.messageId);
    };
    expect(await listed('state=WAITING')).toEqual([second]);
    expect(await listed('state=ACTIVE')).toEqual([first]);
    expect(await listed('state=delayed')).toEqual([delayed, failing]);
    expect(await listed('state=ACTIVE&state=WAITING')).toEqual([second, first]);
    expect(await listed('state=DUE')).toEqual([]);
    const bad = await t.api('/v2/messages?state=STUCK');
    expect(bad.status).toBe(400);
    expect(await bad.json()).toEqual({
      error: 'invalid state "STUCK" (known: ACTIVE, DELAYED, DUE, WAITING)',
    });

    // The key frees its slot: the second message goes out in its turn.
    release();
    await dest.waitFor(3);
    expect(dest.requests.filter((r) => r.path === '/held')).toHaveLength(2);
  });
});

describe.each(STORAGES)('with no engine on %s', (storage) => {
  let t: TestFerry;

  beforeEach(async () => {
    t = await startFerry({ storage, engine: false, clock: new ManualClock(Date.now()) });
  });
  afterEach(() => t.close());

  it('a message due and not taken yet is DUE', async () => {
    const res = await t.api('/v2/publish/https://example.com/due', { method: 'POST' });
    const { messageId } = (await res.json()) as { messageId: string };
    const message = (await (await t.api(`/v2/messages/${messageId}`)).json()) as MessageJson;
    expect(message).toMatchObject({ messageId, state: 'DUE' });
    expect(message.nextDeliveryTime).toBeUndefined();
  });
});
