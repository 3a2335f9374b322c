/**
 * Usage statistics from real metering, clock-controlled: traffic in known minutes, then the
 * stats series checked point by point, and the counters still there after a stop.
 */
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/core/clock.js';
import type { UsageStats } from '../src/core/usage-stats.js';
import { openSqliteDriver } from '../src/storage/sqlite/sqlite-driver.js';
import { STORAGES, startFerry, type TestFerry } from './helpers/ferry.js';
import { createMgmtUser, createQueueAccount, withToken, type MgmtUser } from './helpers/mgmt.js';
import { startReceiver, type Receiver } from './helpers/receiver.js';

const MIN = 60_000;
const T0 = Date.UTC(2026, 2, 10, 12, 0, 30); // Tuesday 10 March 2026, 12:00:30 UTC

describe.each(STORAGES)('on %s', (storage) => {
  let t: TestFerry;
  let clock: ManualClock;
  let admin: MgmtUser;
  let ok: Receiver;
  let failing: Receiver;

  beforeEach(async () => {
    clock = new ManualClock(T0);
    t = await startFerry({ clock, engine: false, storage });
    admin = await createMgmtUser(t, true);
    ok = await startReceiver(() => ({ status: 200 }));
    failing = await startReceiver(() => ({ status: 500 }));
  });
  afterEach(async () => {
    await t.close();
    await ok.close();
    await failing.close();
  });

  it('counts each minute’s traffic into the right point of every series', async () => {
    const account = await createQueueAccount(admin, { type: 'paid' });
    const api = withToken(t.url, account.token);
    let bandwidthAt1200 = 0;
    const publish = async (dest: string, headers: Record<string, string> = {}) => {
      const res = await api(`/v2/publish/${dest}`, { method: 'POST', headers, body: 'hello' });
      expect(res.status).toBe(200);
      return { res, id: ((await res.json()) as { messageId: string }).messageId };
    };

    // 12:00 — three messages created.
    for (let i = 0; i < 3; i++) {
      const { res } = await publish(`${ok.url}/a`);
      bandwidthAt1200 += 5 + Number(res.headers.get('content-length'));
    }
    // 12:02 — two more, one to a failing endpoint with one retry a minute later; then delivery.
    clock.set(T0 + 2 * MIN);
    await publish(`${ok.url}/b`);
    await publish(`${failing.url}/c`, { 'Svc-Retries': '1', 'Svc-Retry-Delay': '60000' });
    expect(await t.ferry.engine.runOnce()).toBe(5); // 4 delivered, 1 retried
    // 12:03 — the retry fails for good (DLQ); a delayed message is published and cancelled.
    clock.set(T0 + 3 * MIN);
    expect(await t.ferry.engine.runOnce()).toBe(1);
    const { id } = await publish(`${ok.url}/d`, { 'Svc-Delay': '1h' });
    expect((await api(`/v2/messages/${id}`, { method: 'DELETE' })).status).toBe(200);

    const stats = await admin.json<UsageStats>(`/v2/queue/stats/${account.id}`);
    // The window ends with the current minute (12:03): point 59 is 12:03, 56 is 12:00.
    const at = (minute: number) => 59 - (3 - minute);
    const expectSeries = (points: { x: string; y: number }[], values: Record<number, number>) => {
      expect(points).toHaveLength(60);
      expect(points[0]?.x).toBe('2026-03-10 11:04:00 +0000 UTC');
      expect(points[59]?.x).toBe('2026-03-10 12:03:00 +0000 UTC');
      points.forEach((p, i) => {
        const minute = Object.keys(values).find((m) => at(Number(m)) === i);
        expect(p.y, `point ${i} (${p.x})`).toBe(minute === undefined ? 0 : values[Number(minute)]);
      });
    };
    expectSeries(stats.daily_used, { 0: 3, 2: 2, 3: 1 });
    const series = Object.fromEntries(stats.daily_queue_messages.map((s) => [s.id, s.data_points]));
    expectSeries(series.delivered ?? [], { 2: 4 });
    expectSeries(series.retried ?? [], { 2: 1 });
    expectSeries(series.failed ?? [], { 3: 1 });
    expectSeries(series.canceled ?? [], { 3: 1 });
    expectSeries(stats.daily_used_workflow, {});
    expect(stats.daily_bandwidth_used[at(0)]?.y).toBe(bandwidthAt1200);
    expect(stats.daily_bandwidth_used[at(2)]?.y).toBeGreaterThan(0);
    expect(stats.dlq_message_count).toBe(1);

    // March 2026: 31 days starting on a Sunday; traffic on the 10th only.
    expect(stats.days).toHaveLength(31);
    expect(stats.days.slice(0, 3)).toEqual(['Sunday', 'Monday', 'Tuesday']);
    expect(stats.daily_requests).toHaveLength(31);
    expect(stats.daily_requests[9]).toEqual({
      x: '2026-03-10 00:00:00 +0000 UTC',
      y: 6,
      workflow_message: 0,
      workflow_run: 0,
    });
    expect(stats.daily_requests.filter((d) => d.y !== 0)).toHaveLength(1);
    expect(stats.daily_billings[9]).toEqual({ x: '2026-03-10 00:00:00 +0000 UTC', y: 0.00006 });
    expect(stats.daily_bandwidths[9]?.y).toBe(
      stats.daily_bandwidth_used.reduce((sum, p) => sum + p.y, 0),
    );
    expect(stats.total_monthly_billing).toBe(0.00006);

    const month = await admin.json<UsageStats>(`/v2/queue/stats/${account.id}?period=30d`);
    expect(month.daily_used).toHaveLength(240);
    expect(month.daily_used[239]).toEqual({ x: '2026-03-10 09:04:00 +0000 UTC', y: 6 });
    const day = await admin.json<UsageStats>(`/v2/queue/stats/${account.id}?period=1d`);
    expect(day.daily_used.map((p) => p.y).reduce((a, b) => a + b, 0)).toBe(6);
  });

  it('rejects an unknown period or parameter with a 400 naming it', async () => {
    const account = await createQueueAccount(admin);
    for (const [query, pattern] of [
      ['period=2h', /period.*"2h"/],
      ['period=', /period ""/],
      ['periods=1h', /periods/],
    ] as const) {
      const res = await admin.api(`/v2/queue/stats/${account.id}?${query}`);
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: string }).error).toMatch(pattern);
    }
  });
});

describe('metering survives a restart', () => {
  it('flushes on stop; the counters are in the database afterwards', async () => {
    const clock = new ManualClock(T0);
    const t = await startFerry({ clock, engine: false });
    try {
      const api = withToken(t.url, t.token);
      for (let i = 0; i < 4; i++) {
        await api('/v2/publish/https://example.com/x', { method: 'POST', body: 'x' });
      }
      await t.ferry.stop();
      const driver = openSqliteDriver({ path: join(t.config.dataDir, 'ferry.db') });
      try {
        const minute = Math.floor(T0 / MIN) * MIN;
        const buckets = await driver.executor.usageSumByStep({
          subjectId: t.account.id,
          from: minute,
          to: minute + MIN,
          stepMs: MIN,
          metrics: ['messages'],
        });
        expect(buckets).toEqual([{ bucket: 0, metric: 'messages', value: 4 }]);
      } finally {
        await driver.close();
      }
    } finally {
      await t.close();
    }
  });
});
