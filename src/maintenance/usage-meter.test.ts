import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../core/clock.js';
import { silentLogger } from '../core/logger.js';
import type { Driver } from '../storage/driver.js';
import { openSqliteDriver } from '../storage/sqlite/sqlite-driver.js';
import { UsageMeter } from './usage-meter.js';

const MIN = 60_000;
const T0 = Date.UTC(2026, 2, 31, 23, 58, 10); // two minutes before April

describe('UsageMeter', () => {
  let driver: Driver;
  let clock: ManualClock;
  let meter: UsageMeter;

  beforeEach(async () => {
    driver = openSqliteDriver({ path: ':memory:' });
    await driver.migrate();
    clock = new ManualClock(T0);
    meter = new UsageMeter({ executor: driver.executor, clock, logger: silentLogger });
  });
  afterEach(async () => {
    await meter.stop();
    await driver.close();
  });

  const perMinute = (subjectId: string, from: number, minutes: number) =>
    driver.executor.usageSumByStep({ subjectId, from, to: from + minutes * MIN, stepMs: MIN });

  it('counts in memory per minute and writes one batch per flush', async () => {
    const minute = Math.floor(T0 / MIN) * MIN;
    meter.add('acct', 'messages', 2);
    meter.add('acct', 'messages', 3, T0 + 20_000); // same minute
    meter.add('acct', 'delivered', 1, T0 + MIN);
    meter.add('acct', 'messages', 0); // nothing
    meter.add('other', 'messages', 7);
    expect(await perMinute('acct', minute, 2)).toEqual([]); // nothing written yet
    expect(await meter.runOnce()).toBe(3);
    expect(await perMinute('acct', minute, 2)).toEqual([
      { bucket: 0, metric: 'messages', value: 5 },
      { bucket: 1, metric: 'delivered', value: 1 },
    ]);
    expect(await meter.runOnce()).toBe(0);
    meter.add('acct', 'messages', 1);
    await meter.runOnce();
    expect((await perMinute('acct', minute, 1))[0]?.value).toBe(6);
  });

  it('concurrent flushes never write a count twice', async () => {
    meter.add('acct', 'messages', 4);
    const flushes = [meter.runOnce(), meter.runOnce(), meter.runOnce()];
    meter.add('acct', 'messages', 1); // lands in a later flush of the three, once
    await Promise.all(flushes);
    const minute = Math.floor(T0 / MIN) * MIN;
    expect(await perMinute('acct', minute, 1)).toEqual([
      { bucket: 0, metric: 'messages', value: 5 },
    ]);
  });

  it('stop() flushes what is left', async () => {
    meter.start();
    meter.add('acct', 'bandwidth', 123);
    await meter.stop();
    expect(await perMinute('acct', Math.floor(T0 / MIN) * MIN, 1)).toEqual([
      { bucket: 0, metric: 'bandwidth', value: 123 },
    ]);
  });

  it('monthCount adds unflushed counts to the stored ones, this month only', async () => {
    meter.add('acct', 'messages', 10); // March
    await meter.runOnce();
    meter.add('acct', 'messages', 5); // March, pending
    expect(await meter.monthCount('acct', 'messages', clock.now())).toBe(15);
    clock.advance(2 * MIN); // April
    meter.add('acct', 'messages', 2);
    expect(await meter.monthCount('acct', 'messages', clock.now())).toBe(2);
    await meter.runOnce();
    expect(await meter.monthCount('acct', 'messages', clock.now())).toBe(2);
    expect(await meter.monthCount('acct', 'delivered', clock.now())).toBe(0);
  });

  it('dayCount counts today (UTC) only, flushed or not, and a flush is never counted twice', async () => {
    meter.add('acct', 'messages', 7, T0 - 86_400_000); // yesterday
    meter.add('acct', 'messages', 4); // today, 23:58
    await meter.runOnce();
    meter.add('acct', 'messages', 1);
    expect(await meter.dayCount('acct', 'messages', clock.now())).toBe(5);
    // A read while a flush is running waits for it: 5 + 1, not 5 + 1 + 1.
    meter.add('acct', 'messages', 1);
    const flushing = meter.runOnce();
    clock.advance(1_000); // past the cached read
    expect(await meter.dayCount('acct', 'messages', clock.now())).toBe(6);
    await flushing;
    clock.advance(2 * MIN); // the next UTC day: the quota starts over
    expect(await meter.dayCount('acct', 'messages', clock.now())).toBe(0);
    meter.add('acct', 'messages', 3);
    expect(await meter.dayCount('acct', 'messages', clock.now())).toBe(3);
  });
});
