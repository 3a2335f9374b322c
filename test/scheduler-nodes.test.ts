/**
 * The scheduler across restarts and nodes: a tick fires exactly once when the process restarts
 * (SQLite file) and when two scheduler instances share one PostgreSQL database.
 */
import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFerry } from '../src/app.js';
import { createAccount } from '../src/cli/credentials.js';
import { ManualClock } from '../src/core/clock.js';
import { newScheduleId } from '../src/core/ids.js';
import { silentLogger } from '../src/core/logger.js';
import { resolvePlans } from '../src/core/plans.js';
import type { Schedule } from '../src/core/schedule.js';
import { AccountDirectory } from '../src/engine/accounts.js';
import { Scheduler } from '../src/scheduler/scheduler.js';
import type { Driver } from '../src/storage/driver.js';
import { openPostgresDriver } from '../src/storage/postgres/postgres-driver.js';
import { pgUrl, startFerry } from './helpers/ferry.js';

const MINUTE = 60_000;
const T0 = Date.UTC(2026, 0, 1);

describe('restart', () => {
  it('a schedule survives a restart; missed ticks fire once, then not again', async () => {
    const clock = new ManualClock(T0 + 30_000);
    const t = await startFerry({ clock, engine: false });
    try {
      const res = await t.api('/v2/schedules/http://127.0.0.1:9/x', {
        method: 'POST',
        headers: { 'Svc-Cron': '* * * * *' },
      });
      const { scheduleId } = (await res.json()) as { scheduleId: string };
      clock.set(T0 + MINUTE);
      expect(await t.ferry.scheduler.runOnce()).toBe(1);
      await t.ferry.stop();

      // Down for 10 minutes; a new process on the same data directory.
      clock.set(T0 + 11 * MINUTE + 5_000);
      const again = await createFerry({ config: t.config, clock, logger: silentLogger });
      try {
        expect(await again.scheduler.runOnce()).toBe(1);
        expect(await again.scheduler.runOnce()).toBe(0);
        const schedule = await again.driver.executor.scheduleGet({
          accountId: t.account.id,
          id: scheduleId,
        });
        expect(schedule?.lastScheduleTime).toBe(T0 + 11 * MINUTE);
        expect(schedule?.nextScheduleTime).toBe(T0 + 12 * MINUTE);
        const { items } = await again.driver.executor.eventList({
          accountId: t.account.id,
          filter: { scheduleIds: [scheduleId], states: ['CREATED'] },
          count: 100,
        });
        expect(items).toHaveLength(2);
      } finally {
        await again.stop();
      }
    } finally {
      await t.close();
    }
  });
});

describe.skipIf(!pgUrl)('two scheduler instances on one PostgreSQL database', () => {
  const schema = `ferry_test_${randomBytes(6).toString('hex')}`;
  const clock = new ManualClock(T0);
  const plans = resolvePlans(undefined);
  let drivers: Driver[] = [];

  beforeAll(async () => {
    drivers = [0, 1].map(() => openPostgresDriver({ url: pgUrl ?? '', schema, max: 4 }));
    await Promise.all(drivers.map((d) => d.migrate()));
  });
  afterAll(async () => {
    await Promise.all(drivers.map((d) => d.close()));
    const sql = postgres(pgUrl ?? '', { max: 1, onnotice: () => undefined });
    await sql.unsafe(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await sql.end();
  });

  it('every tick of every schedule produces exactly one message', async () => {
    const [a, b] = drivers as [Driver, Driver];
    const { account } = await createAccount({ executor: a.executor, plan: 'paid', now: T0 });
    const count = 40;
    for (let i = 0; i < count; i++) {
      const schedule: Schedule = {
        id: newScheduleId(T0),
        accountId: account.id,
        cron: '* * * * *',
        destination: 'http://127.0.0.1:9/tick',
        createdAt: T0,
        paused: false,
        request: { headers: {}, query: [] },
        spec: { method: 'POST', headers: {}, retries: 0 },
        body: new Uint8Array(0),
        callerIp: '127.0.0.1',
        nextScheduleTime: T0 + MINUTE,
      };
      await a.executor.scheduleUpsert({ schedule, maxSchedules: 1_000 });
    }
    // Small batches, so the instances interleave their claims within a tick.
    const schedulers = drivers.flatMap((driver) =>
      [0, 1].map(
        () =>
          new Scheduler({
            executor: driver.executor,
            clock,
            accounts: new AccountDirectory(driver.executor, plans, clock),
            logger: silentLogger,
            prefix: 'Svc',
            onFired: () => undefined,
            batch: 3,
          }),
      ),
    );
    const ticks = 4;
    for (let tick = 1; tick <= ticks; tick++) {
      clock.set(T0 + tick * MINUTE);
      const fired = await Promise.all(schedulers.map((s) => s.runOnce()));
      expect(
        fired.reduce((x, y) => x + y, 0),
        `tick ${tick}`,
      ).toBe(count);
    }
    const { items } = await b.executor.eventList({
      accountId: account.id,
      filter: { states: ['CREATED'] },
      count: 10_000,
    });
    const perScheduleTick = new Map<string, number>();
    for (const event of items) {
      const key = `${event.scheduleId ?? ''}@${event.time}`;
      perScheduleTick.set(key, (perScheduleTick.get(key) ?? 0) + 1);
    }
    expect(items).toHaveLength(count * ticks);
    expect(perScheduleTick.size).toBe(count * ticks);
    expect([...perScheduleTick.values()].every((n) => n === 1)).toBe(true);
  });
});
