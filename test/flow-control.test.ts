/**
 * Flow control and FIFO queues measured at real receivers: the most concurrent requests seen per
 * key, attempt start times per rate period (manual clock), FIFO order per queue with a retry, a
 * callback and a restart, and the flow-control and queue endpoints with their 400/404/412.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createFerry } from '../src/app.js';
import { ManualClock } from '../src/core/clock.js';
import { silentLogger } from '../src/core/logger.js';
import { STORAGES, startFerry, type TestFerry } from './helpers/ferry.js';
import { startReceiver, type Receiver } from './helpers/receiver.js';

/** A receiver that answers after `holdMs` and records the most concurrent requests per path. */
async function concurrencyReceiver(holdMs: number) {
  const current = new Map<string, number>();
  const peak = new Map<string, number>();
  const receiver = await startReceiver(async (req) => {
    const key = req.path.split('?')[0] ?? '';
    const now = (current.get(key) ?? 0) + 1;
    current.set(key, now);
    peak.set(key, Math.max(peak.get(key) ?? 0, now));
    await new Promise((resolve) => setTimeout(resolve, holdMs)); // a slow destination
    current.set(key, (current.get(key) ?? 1) - 1);
    return { status: 200 };
  });
  return { receiver, peak };
}

describe.each(STORAGES)('on %s', (storage) => {
  let t: TestFerry | undefined;
  const receivers: Receiver[] = [];
  afterEach(async () => {
    await t?.close();
    t = undefined;
    await Promise.all(receivers.splice(0).map((r) => r.close()));
  });

  const publish = async (url: string, headers: Record<string, string> = {}, body = '') => {
    const res = await t?.api(`/v2/publish/${url}`, { method: 'POST', headers, body });
    expect(res?.status).toBe(200);
    return ((await res?.json()) as { messageId: string }).messageId;
  };

  it('never more than `parallelism` deliveries in flight per key; unkeyed messages unaffected', async () => {
    t = await startFerry({ storage });
    const { receiver, peak } = await concurrencyReceiver(15);
    receivers.push(receiver);
    const fc = (key: string, value: string) => ({
      'Svc-Flow-Control-Key': key,
      'Svc-Flow-Control-Value': value,
    });
    // One batch: all 36 messages are stored in one commit, so every key has a backlog at once.
    const entries = [];
    for (let i = 0; i < 12; i += 1) {
      entries.push({ destination: `${receiver.url}/k2`, headers: fc('k2', 'parallelism=2') });
      entries.push({
        destination: `${receiver.url}/k3`,
        headers: fc('k3', 'parallelism=3, rate=1000'),
      });
      entries.push({ destination: `${receiver.url}/free` });
    }
    const res = await t.api('/v2/batch', { method: 'POST', body: JSON.stringify(entries) });
    expect(res.status).toBe(200);
    await receiver.waitFor(36, 20_000);
    expect(peak.get('/k2')).toBe(2);
    expect(peak.get('/k3')).toBe(3);
    expect(peak.get('/free')).toBeGreaterThan(3);
    const key = (await (await t.api('/v2/flowControl/k2')).json()) as Record<string, unknown>;
    expect(key).toMatchObject({ flowControlKey: 'k2', parallelismMax: 2, waitListSize: 0 });
  });

  it('never starts more than `rate` attempts per period, retries included (manual clock)', async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1));
    t = await startFerry({ storage, clock, engine: false });
    const starts: { at: number; path: string }[] = [];
    const receiver = await startReceiver((req) => {
      starts.push({ at: clock.now(), path: req.path });
      const first = starts.filter((s) => s.path === '/m1').length === 1;
      return { status: req.path === '/m1' && first ? 503 : 200 }; // m1's first attempt fails
    });
    receivers.push(receiver);
    const headers = {
      'Svc-Flow-Control-Key': 'r',
      'Svc-Flow-Control-Value': 'rate=2, period=1m',
      'Svc-Retries': '1',
      'Svc-Retry-Delay': '1000',
    };
    for (const n of [1, 2, 3, 4]) await publish(`${receiver.url}/m${n}`, headers);
    const run = async () => {
      while ((await t?.ferry.engine.runOnce()) ?? 0 > 0);
    };
    const T0 = clock.now();
    await run();
    clock.advance(1_000); // m1's retry is due, but the period's rate is spent
    await run();
    expect(starts.map((s) => s.path).sort()).toEqual(['/m1', '/m2']);
    const info = (await (await t.api('/v2/flowControl/r')).json()) as Record<string, unknown>;
    expect(info).toMatchObject({ rateMax: 2, rateCount: 2, ratePeriod: 60, waitListSize: 3 });
    expect(info.ratePeriodStart).toBe(Math.floor(T0 / 1000));
    clock.set(T0 + 60_000);
    await run();
    clock.set(T0 + 120_000);
    await run();
    // Period 2: m3 and m4 (due since T0) before m1's retry (due at T0 + 1 s); period 3: m1.
    expect(
      starts
        .slice(2, 4)
        .map((s) => s.path)
        .sort(),
    ).toEqual(['/m3', '/m4']);
    expect(starts.map((s) => s.path).slice(4)).toEqual(['/m1']);
    const perPeriod = new Map<number, number>();
    for (const s of starts) {
      const period = Math.floor((s.at - T0) / 60_000);
      perPeriod.set(period, (perPeriod.get(period) ?? 0) + 1);
    }
    expect([...perPeriod.values()].every((n) => n <= 2)).toBe(true);
  });

  it('a paused key keeps accepting and waits; resume, pin, unpin, resetRate, 404s', async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1));
    t = await startFerry({ storage, clock, engine: false });
    const receiver = await startReceiver();
    receivers.push(receiver);
    const headers = { 'Svc-Flow-Control-Key': 'pk', 'Svc-Flow-Control-Value': 'parallelism=1' };
    // The key has a free slot: /a starts at once, as it is published.
    await publish(`${receiver.url}/a`, headers);
    const open = (await (await t.api('/v2/flowControl/pk')).json()) as Record<string, unknown>;
    expect(open).toMatchObject({ parallelismCount: 1, waitListSize: 0 });
    expect((await t.api('/v2/flowControl/pk/pause', { method: 'POST' })).status).toBe(200);
    await publish(`${receiver.url}/b`, headers);
    await publish(`${receiver.url}/c`, headers);
    // Pausing stops what has not started: /a (started before the pause) is delivered, and the
    // slot it frees is not used while the key is paused.
    expect(await t.ferry.engine.runOnce()).toBe(1);
    expect(await t.ferry.engine.runOnce()).toBe(0);
    const paused = (await (await t.api('/v2/flowControl/pk')).json()) as Record<string, unknown>;
    expect(paused).toMatchObject({ isPaused: true, waitListSize: 2, parallelismCount: 0 });
    await t.api('/v2/flowControl/pk/resume', { method: 'POST' });
    expect(await t.ferry.engine.runOnce()).toBe(1);
    expect(receiver.requests.map((r) => r.path)).toEqual(['/a', '/b']);

    const pin = await t.api('/v2/flowControl/pk/pin?parallelism=4&rate=9&period=1h', {
      method: 'POST',
    });
    expect(await pin.json()).toMatchObject({
      parallelismMax: 4,
      rateMax: 9,
      ratePeriod: 3600,
      rateCount: 0,
      isPinnedParallelism: true,
      isPinnedRate: true,
    });
    await publish(`${receiver.url}/c`, headers); // does not change pinned limits
    const unpin = await t.api('/v2/flowControl/pk/unpin?parallelism=true', { method: 'POST' });
    expect(await unpin.json()).toMatchObject({ parallelismMax: 4, isPinnedParallelism: false });
    const reset = await t.api('/v2/flowControl/pk/resetRate', { method: 'POST' });
    expect(await reset.json()).toMatchObject({ rateCount: 0 });
    const list = (await (await t.api('/v2/flowControl?search=p')).json()) as unknown[];
    expect(list).toHaveLength(1);
    expect(await (await t.api('/v2/flowControl?search=zz')).json()).toEqual([]);

    expect((await t.api('/v2/flowControl/nope')).status).toBe(404);
    expect((await t.api('/v2/flowControl/nope/pause', { method: 'POST' })).status).toBe(404);
    expect((await t.api('/v2/flowControl/pk/pin?parallelism=0', { method: 'POST' })).status).toBe(
      400,
    );
    expect(
      (await t.api('/v2/flowControl/pk/pin?parallelism=1000', { method: 'POST' })).status,
    ).toBe(412);
    expect((await t.api('/v2/flowControl?bogus=1')).status).toBe(400);
    const global = await (await t.api('/v2/globalParallelism')).json();
    expect(global).toEqual({ parallelismMax: 1_000, parallelismCount: 0 });
  });

  it('a queue delivers in order, one at a time, waiting for retries and callbacks; order survives a restart', async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1));
    t = await startFerry({ storage, clock, engine: false });
    const order: string[] = [];
    let failedOnce = false;
    const receiver = await startReceiver((req) => {
      order.push(req.path);
      if (req.path === '/m2' && !failedOnce) {
        failedOnce = true;
        return { status: 500 };
      }
      return { status: 200 };
    });
    receivers.push(receiver);
    const enqueue = async (path: string, headers: Record<string, string> = {}) => {
      const res = await t?.api(`/v2/enqueue/q1/${receiver.url}${path}`, {
        method: 'POST',
        headers: { 'Svc-Retries': '2', 'Svc-Retry-Delay': '5000', ...headers },
      });
      expect(res?.status).toBe(200);
    };
    await enqueue('/m1', { 'Svc-Callback': `${receiver.url}/m1-callback` });
    for (const n of [2, 3, 4, 5, 6]) await enqueue(`/m${n}`);
    const step = async () => t?.ferry.engine.runOnce();
    expect(await step()).toBe(1); // m1
    expect(await step()).toBe(1); // its callback, before m2
    expect(await step()).toBe(1); // m2 fails
    expect(await step()).toBe(0); // m2's retry is not due: m3 waits
    clock.advance(5_000);
    expect(await step()).toBe(1); // m2 again
    expect(await step()).toBe(1); // m3
    expect(order).toEqual(['/m1', '/m1-callback', '/m2', '/m2', '/m3']);
    const queue = (await (await t.api('/v2/queues/q1')).json()) as Record<string, unknown>;
    expect(queue).toMatchObject({ name: 'q1', parallelism: 1, paused: false, lag: 3 });

    // A new process on the same data continues in order.
    await t.ferry.stop();
    const again = await createFerry({
      config: t.config,
      clock,
      logger: silentLogger,
      ...(storage === 'postgres' ? { driver: await reopen(t) } : {}),
    });
    try {
      while ((await again.engine.runOnce()) > 0);
    } finally {
      await again.stop();
    }
    expect(order).toEqual(['/m1', '/m1-callback', '/m2', '/m2', '/m3', '/m4', '/m5', '/m6']);
  });

  it('queue endpoints: upsert, list, get, pause, resume, delete; batch entries with a queue; 400/404/412', async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1));
    t = await startFerry({ storage, clock, engine: false, plan: 'free' });
    const receiver = await startReceiver();
    receivers.push(receiver);
    const post = (path: string, body?: unknown) =>
      t?.api(path, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    expect(
      (await post('/v2/queues', { queueName: 'a', parallelism: 2, paused: true }))?.status,
    ).toBe(200);
    expect((await post('/v2/queues', { queueName: 'bad name!' }))?.status).toBe(400);
    expect((await post('/v2/queues', { queueName: 'a', parallelism: 11 }))?.status).toBe(412);
    expect((await post('/v2/queues', { queueName: 'a', parallelism: 0 }))?.status).toBe(400);
    const entries = [
      { destination: `${receiver.url}/x`, queue: 'a' },
      { destination: `${receiver.url}/y`, queue: 'b' },
    ];
    // A bad queue name fails the whole batch: nothing is stored, queue 'b' is not created.
    const refused = await post('/v2/batch', [
      ...entries,
      { destination: receiver.url, queue: 'no way' },
    ]);
    expect(refused?.status).toBe(400);
    expect(((await refused?.json()) as { error: string }).error).toMatch(
      /^entry 2: invalid queue name/,
    );
    expect((await t.api('/v2/queues/b')).status).toBe(404);
    const batch = await post('/v2/batch', entries);
    const results = (await batch?.json()) as Record<string, unknown>[];
    expect(results[0]).toHaveProperty('messageId');
    expect(results[1]).toHaveProperty('messageId');
    expect(await t.ferry.engine.runOnce()).toBe(1); // 'a' is paused; 'b' delivers
    const listed = (await (await t.api('/v2/queues')).json()) as Record<string, unknown>[];
    expect(listed.map((q) => [q.name, q.parallelism, q.paused, q.lag])).toEqual([
      ['a', 2, true, 1],
      ['b', 1, false, 0],
    ]);
    expect((await post('/v2/queues/a/resume'))?.status).toBe(200);
    expect(await t.ferry.engine.runOnce()).toBe(1);
    expect((await post('/v2/queues/zz/pause'))?.status).toBe(404);
    expect((await t.api('/v2/queues/zz')).status).toBe(404);
    expect((await t.api('/v2/queues/b', { method: 'DELETE' })).status).toBe(200);
    expect((await t.api('/v2/queues/b')).status).toBe(404);
    // A refused enqueue (a bad header) does not create its queue.
    const bad = await t.api(`/v2/enqueue/b/${receiver.url}/x`, {
      method: 'POST',
      headers: { 'Svc-Retries': 'lots' },
    });
    expect(bad.status).toBe(400);
    expect((await t.api('/v2/queues/b')).status).toBe(404);
    // max_queues of the free plan is 10: one queue exists, nine more fit.
    for (let i = 0; i < 9; i += 1) {
      expect((await post('/v2/queues', { queueName: `n${i}` }))?.status).toBe(200);
    }
    expect((await post('/v2/queues', { queueName: 'eleventh' }))?.status).toBe(412);
    const enqueue = await t.api(`/v2/enqueue/eleventh/${receiver.url}/e`, { method: 'POST' });
    expect(enqueue.status).toBe(412);
    expect(((await enqueue.json()) as { error: string }).error).toContain('max_queues (10)');
  });
});

describe('FerryClient', () => {
  it('enqueue, queues and flowControl', async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1));
    const t = await startFerry({ clock, engine: false });
    const receiver = await startReceiver();
    try {
      const { client } = t;
      await client.queues.upsert({ queueName: 'sdk', parallelism: 2 });
      await client.enqueue('sdk', { destination: `${receiver.url}/a` });
      await client.batch([{ destination: `${receiver.url}/b`, queue: 'sdk' }]);
      expect(await client.queues.get('sdk')).toMatchObject({ name: 'sdk', parallelism: 2, lag: 2 });
      await client.queues.pause('sdk');
      expect(await t.ferry.engine.runOnce()).toBe(0);
      await client.queues.resume('sdk');
      expect(await t.ferry.engine.runOnce()).toBe(2);
      expect((await client.queues.list()).map((q) => q.name)).toEqual(['sdk']);
      await client.queues.delete('sdk');
      await expect(client.queues.get('sdk')).rejects.toMatchObject({ status: 404 });

      await client.publish({
        destination: `${receiver.url}/k`,
        flowControl: { key: 'sdk-key', parallelism: 2, rate: 5, period: '1m' },
      });
      // It had a free slot and the rate allowed it: it started as it was published.
      expect(await client.flowControl.get('sdk-key')).toMatchObject({
        waitListSize: 0,
        parallelismCount: 1,
        rateCount: 1,
      });
      const pinned = await client.flowControl.pin('sdk-key', { rate: 7 });
      expect(pinned).toMatchObject({ rateMax: 7, isPinnedRate: true });
      expect((await client.flowControl.unpin('sdk-key', { rate: true })).isPinnedRate).toBe(false);
      expect((await client.flowControl.pause('sdk-key')).isPaused).toBe(true);
      expect((await client.flowControl.resume('sdk-key')).isPaused).toBe(false);
      expect((await client.flowControl.resetRate('sdk-key')).rateCount).toBe(0);
      expect((await client.flowControl.list('sdk')).map((k) => k.flowControlKey)).toEqual([
        'sdk-key',
      ]);
      expect((await client.flowControl.globalParallelism()).parallelismMax).toBe(1_000);
    } finally {
      await t.close();
      await receiver.close();
    }
  });
});

/** A driver on the same PostgreSQL schema as `t` (the first one was closed by its stop). */
async function reopen(t: TestFerry) {
  const { openPostgresDriver } = await import('../src/storage/postgres/postgres-driver.js');
  return openPostgresDriver({ url: process.env.TEST_DATABASE_URL ?? '', schema: t.schema ?? '' });
}
