import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { makeMessage } from '../conformance/fixtures.js';
import { FirstClaimCache } from './first-claim-cache.js';

const T0 = 1_767_225_600_000;
const message = (bytes: number, createdAt = T0) =>
  makeMessage('acct', { body: new Uint8Array(bytes), createdAt });
const kept = (cache: FirstClaimCache, ...messages: ReturnType<typeof message>[]) =>
  messages.map((m) => cache.take(m.id) !== undefined);

describe('FirstClaimCache', () => {
  it('gives a kept message once', () => {
    const cache = new FirstClaimCache();
    const m = message(10);
    cache.add(m, '{"method":"POST"}');
    const entry = cache.take(m.id);
    expect(entry?.spec).toBe('{"method":"POST"}');
    // The published message's columns and body, as a new object; the claim sets spec and lease.
    const { id, accountId, url, callerIp, retried, maxRetries, notBefore, createdAt, dueAt } = m;
    const columns = { id, accountId, url, callerIp, retried, maxRetries, notBefore, createdAt };
    expect(entry?.message).toMatchObject({ ...columns, dueAt });
    expect(Buffer.from(entry!.message.body)).toEqual(Buffer.from(m.body));
    expect(entry?.message).not.toBe(m);
    expect(cache.take(m.id)).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  it('when full, keeps the earlier messages (the next claimed) and not the new one', () => {
    const byCount = new FirstClaimCache(2, 100, 10_000);
    const [a, b, c] = [message(10), message(10), message(10)];
    for (const m of [a, b, c]) byCount.add(m, '{}');
    expect(kept(byCount, a, b, c)).toEqual([true, true, false]);

    const byBytes = new FirstClaimCache(10, 100, 10_000);
    const [d, e, f] = [message(60), message(30), message(30)];
    for (const m of [d, e, f]) byBytes.add(m, '{}');
    expect(kept(byBytes, d, e, f)).toEqual([true, true, false]);
  });

  it('when full, lets a stale entry (one no claim took) make room', () => {
    const cache = new FirstClaimCache(2, 100, 10_000);
    const [old, recent] = [message(10, T0), message(10, T0 + 5_000)];
    cache.add(old, '{}');
    cache.add(recent, '{}');
    const later = message(10, T0 + 10_001);
    cache.add(later, '{}');
    expect(kept(cache, old, recent, later)).toEqual([false, true, true]);
  });

  it('keeps a copy of a small body that is a view into a larger buffer, not the buffer', () => {
    const cache = new FirstClaimCache();
    const big = Buffer.alloc(64 * 1024, 'x');
    const m = makeMessage('acct', { body: big.subarray(100, 210) });
    cache.add(m, '{}');
    const { body } = cache.take(m.id)!.message;
    expect(Buffer.from(body)).toEqual(Buffer.from(m.body));
    expect(body.buffer.byteLength).toBeLessThan(big.byteLength);
  });

  it('keeps neither the published message nor the buffer its body was cut from', async () => {
    // A heap collection on demand, for WeakRefs to tell what the cache still holds.
    v8.setFlagsFromString('--expose-gc');
    const collect = runInNewContext('gc') as () => void;
    const cache = new FirstClaimCache();
    const keep = (): { message: WeakRef<object>; buffer: WeakRef<object>; id: string } => {
      const big = Buffer.alloc(64 * 1024, 'x');
      const m = makeMessage('acct', { body: big.subarray(100, 210), topicName: 'orders' });
      cache.add(m, '{}');
      return { message: new WeakRef(m), buffer: new WeakRef(big.buffer), id: m.id };
    };
    const { message, buffer, id } = keep();
    await new Promise((resolve) => setImmediate(resolve)); // WeakRefs hold until the job ends
    collect();
    expect(message.deref()).toBeUndefined();
    expect(buffer.deref()).toBeUndefined();
    const entry = cache.take(id);
    expect(entry?.message).toMatchObject({ id, topicName: 'orders' });
    expect(entry?.message.body.byteLength).toBe(110);
  });

  it('keeps no body larger than all it may hold', () => {
    const cache = new FirstClaimCache(10, 100);
    cache.add(message(101), '{}');
    expect(cache.size).toBe(0);
  });
});
