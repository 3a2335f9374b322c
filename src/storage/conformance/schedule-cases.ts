/** Cron schedules: upsert (create, replace, limit), read, delete, pause, claim and advance. */
import { expect, it } from 'vitest';
import { newId, newScheduleId } from '../../core/ids.js';
import type { Schedule } from '../../core/schedule.js';
import type { Executor } from '../driver.js';
import { BINARY_BODY, FAR_FUTURE, T0, plain } from './fixtures.js';
import type { SuiteContext } from './suite.js';

const MINUTE = 60_000;

/** A schedule with every optional field absent, next due at T0 + 1 minute. */
export function makeSchedule(accountId: string, overrides: Partial<Schedule> = {}): Schedule {
  return {
    id: newScheduleId(T0),
    accountId,
    cron: '* * * * *',
    destination: 'https://example.com/cron',
    createdAt: T0,
    paused: false,
    request: { headers: { 'svc-retries': ['2'] }, query: [] },
    spec: { method: 'POST', headers: {}, retries: 2 },
    body: new TextEncoder().encode('tick'),
    callerIp: '203.0.113.7',
    nextScheduleTime: T0 + MINUTE,
    ...overrides,
  };
}

/** Every optional field present, a binary body, nested JSON. */
function makeFullSchedule(accountId: string): Schedule {
  return makeSchedule(accountId, {
    id: 'nightly-report.v2_x',
    cron: 'CRON_TZ=Europe/Berlin 0 3 * * *',
    destination: 'ops-group',
    paused: true,
    request: {
      headers: { 'content-type': ['application/octet-stream'], 'svc-forward-x-a': ['1', 'two'] },
      query: [['svc-delay', '10s']],
    },
    spec: {
      method: 'PUT',
      headers: { 'Content-Type': ['application/octet-stream'], 'X-A': ['1', 'two'] },
      retries: 4,
      delayMs: 10_000,
      labels: ['a', 'b'],
      flowControl: { key: 'k', parallelism: 2, periodSec: 1 },
    },
    body: BINARY_BODY,
    callerIp: '2001:db8::1',
    queueName: 'fifo',
    nextScheduleTime: T0 + 2 * MINUTE,
    lastScheduleTime: T0 + MINUTE,
    lastMessageIds: [newId('msg'), newId('msg')],
  });
}

/**
 * Claims up to `limit` schedules due at `now` and moves them to `next` (absent: never due
 * again), in `tx`; returns their ids.
 */
async function claimAndAdvance(
  tx: Executor,
  p: { now: number; limit: number; next?: number },
): Promise<string[]> {
  const due = await tx.scheduleClaimDue({ now: p.now, limit: p.limit });
  await tx.scheduleAdvanceMany({
    advances: due.map((s) => ({
      accountId: s.accountId,
      id: s.id,
      lastScheduleTime: p.now,
      nextScheduleTime: p.next,
      lastMessageIds: [],
    })),
  });
  return ids(due);
}

/**
 * Takes every due schedule out of the claimable set (next tick NULL): claiming has no account
 * scope, so the claim cases start with nothing else due.
 */
async function clearDueSchedules(executor: Executor): Promise<void> {
  for (;;) {
    const n = await executor.transaction(
      async (tx) => (await claimAndAdvance(tx, { now: FAR_FUTURE, limit: 500 })).length,
    );
    if (n === 0) return;
  }
}

const ids = (schedules: Schedule[]): string[] => schedules.map((s) => s.id);

export function scheduleCases(ctx: SuiteContext): void {
  it('scheduleUpsert creates; scheduleGet returns every field as written', async () => {
    const ex = ctx.executor();
    const accountId = newId('acct');
    const made = [makeSchedule(accountId), makeFullSchedule(accountId)];
    for (const schedule of made) {
      expect(await ex.scheduleUpsert({ schedule, maxSchedules: 10 })).toBe('created');
      expect(plain(await ex.scheduleGet({ accountId, id: schedule.id }))).toEqual(plain(schedule));
    }
    const minimal = await ex.scheduleGet({ accountId, id: made[0]?.id ?? '' });
    for (const key of ['queueName', 'lastScheduleTime', 'lastMessageIds'] as const) {
      expect(minimal?.[key], key).toBeUndefined();
    }
  });

  it('scheduleGet, scheduleList and scheduleDelete are scoped by account; ids repeat across accounts', async () => {
    const ex = ctx.executor();
    const [a, b] = [newId('acct'), newId('acct')];
    await ex.scheduleUpsert({ schedule: makeSchedule(a, { id: 'daily' }), maxSchedules: 10 });
    await ex.scheduleUpsert({
      schedule: makeSchedule(b, { id: 'daily', destination: 'https://b.example/' }),
      maxSchedules: 10,
    });
    expect((await ex.scheduleGet({ accountId: a, id: 'daily' }))?.destination).toBe(
      'https://example.com/cron',
    );
    expect((await ex.scheduleGet({ accountId: b, id: 'daily' }))?.destination).toBe(
      'https://b.example/',
    );
    expect(await ex.scheduleGet({ accountId: newId('acct'), id: 'daily' })).toBeUndefined();
    expect(await ex.scheduleDelete({ accountId: newId('acct'), id: 'daily' })).toBe(false);
    expect(await ex.scheduleDelete({ accountId: a, id: 'daily' })).toBe(true);
    expect(await ex.scheduleDelete({ accountId: a, id: 'daily' })).toBe(false);
    expect(await ex.scheduleGet({ accountId: a, id: 'daily' })).toBeUndefined();
    expect(ids(await ex.scheduleList({ accountId: b }))).toEqual(['daily']);
  });

  it('scheduleList returns the account’s schedules oldest first', async () => {
    const ex = ctx.executor();
    const accountId = newId('acct');
    const made = [3, 1, 2].map((i) => makeSchedule(accountId, { id: `s${i}`, createdAt: T0 + i }));
    for (const schedule of made) await ex.scheduleUpsert({ schedule, maxSchedules: 10 });
    expect(ids(await ex.scheduleList({ accountId }))).toEqual(['s1', 's2', 's3']);
    expect(await ex.scheduleList({ accountId: newId('acct') })).toEqual([]);
  });

  it('upserting an existing id replaces the schedule entirely', async () => {
    const ex = ctx.executor();
    const accountId = newId('acct');
    const full = makeFullSchedule(accountId);
    await ex.scheduleUpsert({ schedule: full, maxSchedules: 10 });
    const replacement = makeSchedule(accountId, { id: full.id, createdAt: T0 + 5 });
    expect(await ex.scheduleUpsert({ schedule: replacement, maxSchedules: 10 })).toBe('replaced');
    expect(plain(await ex.scheduleGet({ accountId, id: full.id }))).toEqual(plain(replacement));
    expect(await ex.scheduleList({ accountId })).toHaveLength(1);
  });

  it('scheduleUpsert refuses a new schedule at maxSchedules, but still replaces', async () => {
    const ex = ctx.executor();
    const accountId = newId('acct');
    const first = makeSchedule(accountId);
    await ex.scheduleUpsert({ schedule: first, maxSchedules: 2 });
    await ex.scheduleUpsert({ schedule: makeSchedule(accountId), maxSchedules: 2 });
    const third = makeSchedule(accountId);
    expect(await ex.scheduleUpsert({ schedule: third, maxSchedules: 2 })).toBe('limit');
    expect(await ex.scheduleGet({ accountId, id: third.id })).toBeUndefined();
    const again = { ...first, cron: '*/5 * * * *' };
    expect(await ex.scheduleUpsert({ schedule: again, maxSchedules: 2 })).toBe('replaced');
    expect(await ex.scheduleList({ accountId })).toHaveLength(2);
    // Another account has its own count.
    const other = makeSchedule(newId('acct'));
    expect(await ex.scheduleUpsert({ schedule: other, maxSchedules: 2 })).toBe('created');
  });

  it('concurrent creates never exceed maxSchedules', async () => {
    const ex = ctx.executor();
    const accountId = newId('acct');
    const results = await Promise.all(
      Array.from({ length: 8 }, () =>
        ex.scheduleUpsert({ schedule: makeSchedule(accountId), maxSchedules: 3 }),
      ),
    );
    expect(results.filter((r) => r === 'created')).toHaveLength(3);
    expect(results.filter((r) => r === 'limit')).toHaveLength(5);
    expect(await ex.scheduleList({ accountId })).toHaveLength(3);
  });

  it('claims due schedules that are not paused, earliest first, up to the limit', async () => {
    const ex = ctx.executor();
    await clearDueSchedules(ex);
    const accountId = newId('acct');
    const at = (minutes: number, o: Partial<Schedule> = {}) =>
      makeSchedule(accountId, { id: `m${minutes}`, nextScheduleTime: T0 + minutes * MINUTE, ...o });
    for (const schedule of [
      at(3),
      at(1),
      at(2),
      at(4, { paused: true }),
      at(9),
      makeSchedule(accountId, { id: 'never', nextScheduleTime: undefined }),
    ]) {
      await ex.scheduleUpsert({ schedule, maxSchedules: 10 });
    }
    expect(await ex.scheduleNextDueAt()).toBe(T0 + MINUTE);
    expect(ids(await ex.scheduleClaimDue({ now: T0 + 4 * MINUTE, limit: 10 }))).toEqual([
      'm1',
      'm2',
      'm3',
    ]);
    expect(ids(await ex.scheduleClaimDue({ now: T0 + 4 * MINUTE, limit: 2 }))).toEqual([
      'm1',
      'm2',
    ]);
    expect(await ex.scheduleClaimDue({ now: T0, limit: 10 })).toEqual([]);
    expect(await ex.scheduleClaimDue({ now: T0 + 4 * MINUTE, limit: 0 })).toEqual([]);
  });

  it('scheduleAdvanceMany records the tick; the schedule is due again at its next tick', async () => {
    const ex = ctx.executor();
    await clearDueSchedules(ex);
    const accountId = newId('acct');
    const schedule = makeSchedule(accountId);
    await ex.scheduleUpsert({ schedule, maxSchedules: 10 });
    const messageIds = [newId('msg')];
    await ex.transaction(async (tx) => {
      const [due] = await tx.scheduleClaimDue({ now: T0 + MINUTE, limit: 10 });
      expect(due?.id).toBe(schedule.id);
      await tx.scheduleAdvanceMany({
        advances: [
          {
            accountId,
            id: schedule.id,
            lastScheduleTime: T0 + MINUTE,
            nextScheduleTime: T0 + 2 * MINUTE,
            lastMessageIds: messageIds,
          },
        ],
      });
    });
    const got = await ex.scheduleGet({ accountId, id: schedule.id });
    expect(got).toMatchObject({
      lastScheduleTime: T0 + MINUTE,
      nextScheduleTime: T0 + 2 * MINUTE,
      lastMessageIds: messageIds,
    });
    expect(await ex.scheduleClaimDue({ now: T0 + MINUTE, limit: 10 })).toEqual([]);
    expect(await ex.scheduleNextDueAt()).toBe(T0 + 2 * MINUTE);
  });

  it('a claim rolled back with its transaction leaves the schedule due', async () => {
    const ex = ctx.executor();
    await clearDueSchedules(ex);
    const accountId = newId('acct');
    const schedule = makeSchedule(accountId);
    await ex.scheduleUpsert({ schedule, maxSchedules: 10 });
    await expect(
      ex.transaction(async (tx) => {
        await claimAndAdvance(tx, { now: T0 + MINUTE, limit: 10, next: T0 + 2 * MINUTE });
        throw new Error('crash between claim and commit');
      }),
    ).rejects.toThrow('crash');
    expect(ids(await ex.scheduleClaimDue({ now: T0 + MINUTE, limit: 10 }))).toEqual([schedule.id]);
    expect(
      (await ex.scheduleGet({ accountId, id: schedule.id }))?.lastScheduleTime,
    ).toBeUndefined();
  });

  it('concurrent claiming transactions never get the same schedule', async () => {
    const ex = ctx.executor();
    await clearDueSchedules(ex);
    const accountId = newId('acct');
    const made = Array.from({ length: 20 }, () => makeSchedule(accountId));
    for (const schedule of made) await ex.scheduleUpsert({ schedule, maxSchedules: 100 });
    const claimOnce = () =>
      ex.transaction((tx) =>
        claimAndAdvance(tx, { now: T0 + MINUTE, limit: 7, next: T0 + 2 * MINUTE }),
      );
    const claimed = (await Promise.all(Array.from({ length: 5 }, claimOnce))).flat();
    expect(claimed).toHaveLength(20);
    expect(new Set(claimed).size).toBe(20);
  });

  it('scheduleSetPaused pauses and resumes, optionally moving the next tick', async () => {
    const ex = ctx.executor();
    await clearDueSchedules(ex);
    const accountId = newId('acct');
    const schedule = makeSchedule(accountId);
    await ex.scheduleUpsert({ schedule, maxSchedules: 10 });
    expect(await ex.scheduleSetPaused({ accountId, id: schedule.id, paused: true })).toBe(true);
    expect((await ex.scheduleGet({ accountId, id: schedule.id }))?.paused).toBe(true);
    expect(await ex.scheduleClaimDue({ now: T0 + MINUTE, limit: 10 })).toEqual([]);
    expect(await ex.scheduleNextDueAt()).toBeUndefined();
    expect(
      await ex.scheduleSetPaused({
        accountId,
        id: schedule.id,
        paused: false,
        nextScheduleTime: T0 + 5 * MINUTE,
      }),
    ).toBe(true);
    const resumed = await ex.scheduleGet({ accountId, id: schedule.id });
    expect(resumed).toMatchObject({ paused: false, nextScheduleTime: T0 + 5 * MINUTE });
    expect(await ex.scheduleNextDueAt()).toBe(T0 + 5 * MINUTE);
    expect(
      await ex.scheduleSetPaused({ accountId: newId('acct'), id: schedule.id, paused: true }),
    ).toBe(false);
  });
}
