/**
 * Flow control under load: a key with a long wait list does not hold up other messages (head of
 * line), and two engines sharing one PostgreSQL database keep a key's parallelism and a queue's
 * order between them.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createFerry, type Ferry } from '../src/app.js';
import { silentLogger } from '../src/core/logger.js';
import { openPostgresDriver } from '../src/storage/postgres/postgres-driver.js';
import { makeMessage } from '../src/storage/conformance/fixtures.js';
import { pgUrl, startFerry, STORAGES, type TestFerry } from './helpers/ferry.js';
import { startReceiver, type Receiver } from './helpers/receiver.js';

let t: TestFerry | undefined;
let second: Ferry | undefined;
const receivers: Receiver[] = [];
afterEach(async () => {
  await second?.stop();
  second = undefined;
  await t?.close();
  t = undefined;
  await Promise.all(receivers.splice(0).map((r) => r.close()));
});

/** Waiting messages inserted straight through the storage operation, in one transaction. */
const BIG_KEY_MESSAGES = 100_000;
/** The bound for the unrelated messages, on a shared 2-core machine. */
const BOUND_MS = 3_000;

describe.each(STORAGES)('head-of-line blocking (%s)', (storage) => {
  it(`a key with ${BIG_KEY_MESSAGES} waiting messages (parallelism 1) does not delay other messages`, async () => {
    // The fixture's one INSERT of 100,000 rows (ten times what one request may store) can take
    // longer than the default 5 s --database-timeout on a loaded machine.
    t = await startFerry({ storage, args: ['--database-timeout', '60s'] });
    const receiver = await startReceiver();
    receivers.push(receiver);
    const now = Date.now();
    const big = Array.from({ length: BIG_KEY_MESSAGES }, () =>
      makeMessage(t?.account.id ?? '', {
        url: `${receiver.url}/big`,
        createdAt: now,
        dueAt: now,
        notBefore: now,
        spec: { method: 'POST', headers: {}, flowControl: { key: 'big', parallelism: 1 } },
      }),
    );
    await t.ferry.driver.executor.transaction((tx) => tx.messageInsertMany({ messages: big }));
    t.ferry.engine.wake();
    await receiver.waitFor(1); // the big key is draining

    const started = Date.now();
    const entries = [
      ...Array.from({ length: 200 }, () => ({ destination: `${receiver.url}/free` })),
      ...Array.from({ length: 20 }, () => ({
        destination: `${receiver.url}/other`,
        headers: { 'Svc-Flow-Control-Key': 'other', 'Svc-Flow-Control-Value': 'parallelism=5' },
      })),
    ];
    const res = await t.api('/v2/batch', { method: 'POST', body: JSON.stringify(entries) });
    expect(res.status).toBe(200);
    const unrelated = () => receiver.requests.filter((r) => r.path !== '/big').length;
    while (unrelated() < 220) {
      expect(Date.now() - started).toBeLessThan(BOUND_MS);
      await receiver.waitFor(receiver.requests.length + 1, BOUND_MS);
    }
    const elapsed = Date.now() - started;
    expect(elapsed).toBeLessThan(BOUND_MS);
    const key = (await (await t.api('/v2/flowControl/big')).json()) as { waitListSize: number };
    expect(key.waitListSize).toBeGreaterThan(BIG_KEY_MESSAGES / 2); // still draining
  });
});

describe.skipIf(!pgUrl)('two engines on one PostgreSQL database', () => {
  it("hold a key's parallelism and a queue's order between them", async () => {
    t = await startFerry({ storage: 'postgres' });
    second = await createFerry({
      config: { ...t.config, port: 0, roles: ['api', 'worker'] },
      logger: silentLogger,
      driver: openPostgresDriver({ url: pgUrl ?? '', schema: t.schema ?? '' }),
    });
    await second.start();
    let current = 0;
    let peak = 0;
    const engines = new Set<string>();
    const order: string[] = [];
    const receiver = await startReceiver(async (req) => {
      if (req.path.startsWith('/q')) {
        order.push(req.path);
        return { status: 200 };
      }
      engines.add(String(req.headers['svc-message-id']).slice(0, 3));
      current += 1;
      peak = Math.max(peak, current);
      await new Promise((resolve) => setTimeout(resolve, 20)); // a slow destination
      current -= 1;
      return { status: 200 };
    });
    receivers.push(receiver);
    const keyed = Array.from({ length: 40 }, () => ({
      destination: `${receiver.url}/k`,
      headers: { 'Svc-Flow-Control-Key': 'shared', 'Svc-Flow-Control-Value': 'parallelism=3' },
    }));
    const queued = Array.from({ length: 15 }, (_, i) => ({
      destination: `${receiver.url}/q${String(i).padStart(2, '0')}`,
      queue: 'fifo',
    }));
    const res = await t.api('/v2/batch', {
      method: 'POST',
      body: JSON.stringify([...keyed, ...queued]),
    });
    expect(res.status).toBe(200);
    await receiver.waitFor(55, 30_000);
    expect(peak).toBeLessThanOrEqual(3);
    expect(peak).toBeGreaterThan(1);
    expect(order).toEqual(queued.map((q) => new URL(q.destination).pathname));

    // Single publishes racing on both nodes' APIs: each may start its message as it is
    // published (the key has room), and the two nodes still never pass the key's parallelism.
    peak = 0;
    const bases = [t.url, second.url];
    const publishes = Array.from({ length: 60 }, (_, i) =>
      fetch(`${bases[i % 2] ?? ''}/v2/publish/${receiver.url}/k2`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${t?.token ?? ''}`,
          'Svc-Flow-Control-Key': 'racing',
          'Svc-Flow-Control-Value': 'parallelism=2',
        },
        body: `m${i}`,
      }),
    );
    expect((await Promise.all(publishes)).map((r) => r.status)).toEqual(Array(60).fill(200));
    await receiver.waitFor(55 + 60, 30_000);
    expect(peak).toBeLessThanOrEqual(2);
    expect(peak).toBe(2);
  });
});
