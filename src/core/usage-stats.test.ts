import { describe, expect, it } from 'vitest';
import {
  billingOf,
  buildStats,
  exceedsBudget,
  monthWindow,
  parsePeriod,
  periodWindow,
  STATS_PERIODS,
  timeText,
} from './usage-stats.js';

const MIN = 60_000;

describe('parsePeriod', () => {
  it('defaults to 1h and accepts every period of the contract', () => {
    expect(parsePeriod(undefined)).toBe('1h');
    for (const p of ['1h', '3h', '12h', '1d', '3d', '7d', '30d']) expect(parsePeriod(p)).toBe(p);
  });
  it.each(['2h', '', '1H', 'toString', ['1h']])('rejects %j with a 400 naming period', (v) => {
    expect(() => parsePeriod(v)).toThrow(expect.objectContaining({ status: 400 }));
    expect(() => parsePeriod(v)).toThrow(/period/);
  });
});

describe('periodWindow', () => {
  it.each([
    ['1h', 60, 1],
    ['3h', 60, 3],
    ['12h', 60, 12],
    ['1d', 60, 24],
    ['3d', 60, 72],
    ['7d', 60, 168],
    ['30d', 240, 180],
  ] as const)('%s has %i points %i minutes apart', (period, points, minutes) => {
    expect(STATS_PERIODS[period]).toEqual({ points, stepMs: minutes * MIN });
    const now = Date.UTC(2026, 2, 10, 12, 30, 45, 500);
    const w = periodWindow(period, now);
    expect(w.to).toBe(Date.UTC(2026, 2, 10, 12, 31));
    expect(w.to - w.from).toBe(points * minutes * MIN);
    expect(w.points).toBe(points);
  });
});

describe('monthWindow', () => {
  it.each([
    [Date.UTC(2026, 1, 14, 5), Date.UTC(2026, 1, 1), 28],
    [Date.UTC(2028, 1, 29, 23, 59), Date.UTC(2028, 1, 1), 29],
    [Date.UTC(2026, 11, 31, 23, 59, 59), Date.UTC(2026, 11, 1), 31],
    [Date.UTC(2026, 3, 1), Date.UTC(2026, 3, 1), 30],
  ])('at %i starts at %i with %i days', (now, from, days) => {
    expect(monthWindow(now)).toMatchObject({ from, points: days, stepMs: 86_400_000 });
  });
});

describe('timeText', () => {
  it('is YYYY-MM-DD HH:MM:SS +0000 UTC', () => {
    expect(timeText(Date.UTC(2026, 0, 2, 3, 4, 5, 999))).toBe('2026-01-02 03:04:05 +0000 UTC');
  });
});

describe('billing', () => {
  it('charges the price per 100,000 messages', () => {
    expect(billingOf(100_000, 1)).toBe(1);
    expect(billingOf(1, 1)).toBe(0.00001);
    expect(billingOf(250_000, 1)).toBe(2.5);
    expect(billingOf(1_000_000, 0)).toBe(0);
  });
  it('a budget is exceeded only past it, and 0 means none', () => {
    const base = { pricePer100k: 1, monthMessages: 99_999 };
    expect(exceedsBudget({ ...base, budget: 1, adding: 1 })).toBe(false);
    expect(exceedsBudget({ ...base, budget: 1, adding: 2 })).toBe(true);
    expect(exceedsBudget({ ...base, budget: 0, adding: 10_000_000 })).toBe(false);
    expect(exceedsBudget({ ...base, pricePer100k: 0, budget: 1, adding: 10_000_000 })).toBe(false);
  });
});

describe('buildStats', () => {
  const now = Date.UTC(2026, 1, 3, 10, 5, 30); // a Tuesday, February 2026 (28 days)
  const period = periodWindow('1h', now);
  const month = monthWindow(now);

  it('puts each bucket at its point and every day of the month in the daily arrays', () => {
    const stats = buildStats({
      period,
      periodBuckets: [
        { bucket: 59, metric: 'messages', value: 3 },
        { bucket: 0, metric: 'delivered', value: 2 },
        { bucket: 30, metric: 'bandwidth', value: 512 },
        { bucket: 60, metric: 'messages', value: 99 }, // outside the window: ignored
      ],
      month,
      monthBuckets: [
        { bucket: 2, metric: 'messages', value: 150_000 },
        { bucket: 0, metric: 'messages', value: 50_000 },
        { bucket: 2, metric: 'bandwidth', value: 4096 },
        { bucket: 2, metric: 'workflow_run', value: 1 },
      ],
      dlqCount: 4,
      pricePer100k: 1,
    });
    expect(stats.daily_used).toHaveLength(60);
    expect(stats.daily_used[0]).toEqual({ x: '2026-02-03 09:06:00 +0000 UTC', y: 0 });
    expect(stats.daily_used[59]).toEqual({ x: '2026-02-03 10:05:00 +0000 UTC', y: 3 });
    expect(stats.daily_used.slice(0, 59).every((p) => p.y === 0)).toBe(true);
    const delivered = stats.daily_queue_messages.find((s) => s.id === 'delivered');
    expect(delivered?.data_points.map((p) => p.y)).toEqual([2, ...new Array<number>(59).fill(0)]);
    expect(stats.daily_queue_messages.map((s) => s.id)).toEqual([
      'delivered',
      'retried',
      'failed',
      'canceled',
    ]);
    expect(stats.daily_workflow_messages.map((s) => s.id)).toEqual(['delivered', 'canceled']);
    expect(stats.daily_bandwidth_used[30]?.y).toBe(512);

    expect(stats.days).toHaveLength(28);
    expect(stats.days.slice(0, 3)).toEqual(['Sunday', 'Monday', 'Tuesday']);
    expect(stats.daily_requests).toHaveLength(28);
    expect(stats.daily_requests[2]).toEqual({
      x: '2026-02-03 00:00:00 +0000 UTC',
      y: 150_000,
      workflow_message: 0,
      workflow_run: 1,
    });
    expect(stats.daily_requests[27]).toEqual({
      x: '2026-02-28 00:00:00 +0000 UTC',
      y: 0,
      workflow_message: 0,
      workflow_run: 0,
    });
    expect(stats.daily_billings[0]?.y).toBe(0.5);
    expect(stats.daily_billings[2]?.y).toBe(1.5);
    expect(stats.daily_bandwidths[2]?.y).toBe(4096);
    expect(stats.total_monthly_billing).toBe(2);
    expect(stats.dlq_message_count).toBe(4);
  });

  it('the 30d series has 240 points three hours apart', () => {
    const w = periodWindow('30d', now);
    const stats = buildStats({
      period: w,
      periodBuckets: [],
      month,
      monthBuckets: [],
      dlqCount: 0,
      pricePer100k: 1,
    });
    expect(stats.daily_used).toHaveLength(240);
    expect(stats.daily_used[239]?.x).toBe('2026-02-03 07:06:00 +0000 UTC');
    expect(stats.total_monthly_billing).toBe(0);
  });
});
