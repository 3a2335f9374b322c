import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Driver } from '../storage/driver.js';
import { openSqliteDriver } from '../storage/sqlite/sqlite-driver.js';
import { RequestRateLimiter } from './limits.js';

const NOW = Date.UTC(2026, 5, 1, 9, 0, 0, 250);

describe('RequestRateLimiter: nodes take shares of one counter', () => {
  let driver: Driver;
  beforeAll(async () => {
    driver = openSqliteDriver({ path: ':memory:' });
    await driver.migrate();
  });
  afterAll(() => driver.close());

  /** Admits up to `n` requests on `node`; returns how many were admitted. */
  const admitted = async (node: RequestRateLimiter, account: string, n: number, now = NOW) => {
    let ok = 0;
    for (let i = 0; i < n; i++) if ((await node.admit(account, 20, now)) === undefined) ok++;
    return ok;
  };

  it('two nodes together never admit more than the limit, and a share is not lost', async () => {
    const a = new RequestRateLimiter({ executor: driver.executor }); // shares of 2 (10 % of 20)
    const b = new RequestRateLimiter({ executor: driver.executor });
    expect(await admitted(a, 'acct-1', 3)).toBe(3); // took 2 + 2
    expect(await admitted(b, 'acct-1', 30)).toBe(16); // the other 16
    expect(await admitted(a, 'acct-1', 5)).toBe(1); // what is left of its share
    const refused = await a.admit('acct-1', 20, NOW);
    expect(refused).toEqual({ windowStart: NOW - 250, count: expect.any(Number) as number });
    // The next second starts over; another account was never affected.
    expect(await admitted(b, 'acct-1', 30, NOW + 750)).toBe(20);
    expect(await admitted(a, 'acct-2', 30)).toBe(20);
  });

  it('concurrent requests on one node admit exactly the limit', async () => {
    const node = new RequestRateLimiter({ executor: driver.executor });
    const results = await Promise.all(
      Array.from({ length: 50 }, () => node.admit('acct-3', 20, NOW)),
    );
    expect(results.filter((r) => r === undefined)).toHaveLength(20);
  });
});
