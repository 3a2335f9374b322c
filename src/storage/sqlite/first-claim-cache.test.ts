import { describe, expect, it } from 'vitest';
import { makeMessage } from '../conformance/fixtures.js';
import { FirstClaimCache } from './first-claim-cache.js';

const withBody = (bytes: number) => makeMessage('acct', { body: new Uint8Array(bytes) });

describe('FirstClaimCache', () => {
  it('gives a kept message once', () => {
    const cache = new FirstClaimCache();
    const message = withBody(10);
    cache.add(message, '{"method":"POST"}');
    expect(cache.take(message.id)).toEqual({ message, spec: '{"method":"POST"}' });
    expect(cache.take(message.id)).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  it('pushes out the oldest beyond its count or its bytes of bodies', () => {
    const cache = new FirstClaimCache(2, 100);
    const [a, b, c] = [withBody(10), withBody(10), withBody(10)];
    for (const m of [a, b, c]) cache.add(m, '{}');
    expect([a, b, c].map((m) => cache.take(m.id) !== undefined)).toEqual([false, true, true]);

    const [d, e, f] = [withBody(60), withBody(30), withBody(30)];
    for (const m of [d, e, f]) cache.add(m, '{}');
    expect([d, e, f].map((m) => cache.take(m.id) !== undefined)).toEqual([false, true, true]);
  });

  it('keeps no body larger than all it may hold', () => {
    const cache = new FirstClaimCache(10, 100);
    const big = withBody(101);
    cache.add(big, '{}');
    expect(cache.size).toBe(0);
  });
});
