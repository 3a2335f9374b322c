/**
 * The math of usage statistics, pure: periods and their steps, the UTC time text of data points,
 * the days of the current month, billing from message counts, and the stats object of
 * `GET /v2/queue/stats/{id}` built from summed usage buckets.
 */
import { badRequest } from './errors.js';
import type { UsageBucket, UsageMetric } from './management.js';

export const MINUTE_MS = 60_000;
const DAY_MS = 86_400_000;

export type StatsPeriod = '1h' | '3h' | '12h' | '1d' | '3d' | '7d' | '30d';

/** Points per period and the step between them (API.md "Stats"). */
export const STATS_PERIODS: Readonly<Record<StatsPeriod, { points: number; stepMs: number }>> = {
  '1h': { points: 60, stepMs: MINUTE_MS },
  '3h': { points: 60, stepMs: 3 * MINUTE_MS },
  '12h': { points: 60, stepMs: 12 * MINUTE_MS },
  '1d': { points: 60, stepMs: 24 * MINUTE_MS },
  '3d': { points: 60, stepMs: 72 * MINUTE_MS },
  '7d': { points: 60, stepMs: 168 * MINUTE_MS },
  '30d': { points: 240, stepMs: 180 * MINUTE_MS },
};

/** The `period` query value; absent means `1h`. Anything else is a 400 naming it. */
export function parsePeriod(value: unknown): StatsPeriod {
  if (value === undefined) return '1h';
  if (typeof value === 'string' && Object.hasOwn(STATS_PERIODS, value)) {
    return value as StatsPeriod;
  }
  throw badRequest(
    `period ${JSON.stringify(value)} is not one of ${Object.keys(STATS_PERIODS).join(', ')}`,
  );
}

/** A series window: `points` steps of `stepMs` in `[from, to)`. */
export interface SeriesWindow {
  from: number;
  to: number;
  stepMs: number;
  points: number;
}

/**
 * The window of a period at `now`: it ends with the current minute (included, so traffic of this
 * minute shows at once) and spans `points` steps back from there.
 */
export function periodWindow(period: StatsPeriod, now: number): SeriesWindow {
  const { points, stepMs } = STATS_PERIODS[period];
  const to = Math.floor(now / MINUTE_MS) * MINUTE_MS + MINUTE_MS;
  return { from: to - points * stepMs, to, stepMs, points };
}

/** The current UTC month as a window of one-day steps (28 to 31 points). */
export function monthWindow(now: number): SeriesWindow {
  const date = new Date(now);
  const from = Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1);
  const to = Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 1);
  return { from, to, stepMs: DAY_MS, points: Math.round((to - from) / DAY_MS) };
}

const pad = (n: number): string => String(n).padStart(2, '0');

/** `YYYY-MM-DD HH:MM:SS +0000 UTC`, the x text of every data point. */
export function timeText(ms: number): string {
  const d = new Date(ms);
  return (
    `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())} ` +
    `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())} +0000 UTC`
  );
}

const WEEKDAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];

/** Dollars for `messages` at `pricePer100k` dollars per 100,000 messages (to 1e-6 dollar). */
export function billingOf(messages: number, pricePer100k: number): number {
  return Math.round((messages * pricePer100k * 1_000_000) / 100_000) / 1_000_000;
}

/** True when adding `adding` messages takes the month's billing past a budget (0 = none). */
export function exceedsBudget(p: {
  budget: number;
  monthMessages: number;
  adding: number;
  pricePer100k: number;
}): boolean {
  if (p.budget <= 0) return false;
  return billingOf(p.monthMessages + p.adding, p.pricePer100k) > p.budget;
}

export interface DataPoint {
  x: string;
  y: number;
}

export interface NamedSeries {
  id: string;
  data_points: DataPoint[];
}

/** The stats object of `interface.md`, endpoint 3. */
export interface UsageStats {
  days: string[];
  daily_requests: (DataPoint & { workflow_message: number; workflow_run: number })[];
  daily_billings: DataPoint[];
  daily_bandwidths: DataPoint[];
  daily_used: DataPoint[];
  daily_used_workflow: DataPoint[];
  daily_queue_messages: NamedSeries[];
  daily_workflow_messages: NamedSeries[];
  dlq_message_count: number;
  daily_bandwidth_used: DataPoint[];
  total_monthly_billing: number;
}

/** Per-step values of one metric over a window (0 where no bucket exists). */
export function seriesValues(
  buckets: readonly UsageBucket[],
  metric: UsageMetric,
  points: number,
): number[] {
  const values = new Array<number>(points).fill(0);
  for (const b of buckets) {
    if (b.metric === metric && b.bucket >= 0 && b.bucket < points) {
      values[b.bucket] = (values[b.bucket] ?? 0) + b.value;
    }
  }
  return values;
}

/** The points of one metric over a window: x = the start of each step. */
export function seriesPoints(
  window: SeriesWindow,
  buckets: readonly UsageBucket[],
  metric: UsageMetric,
): DataPoint[] {
  return seriesValues(buckets, metric, window.points).map((y, i) => ({
    x: timeText(window.from + i * window.stepMs),
    y,
  }));
}

/** The message metrics of `daily_queue_messages`, by id, and of `daily_workflow_messages`. */
const QUEUE_SERIES: readonly [string, UsageMetric][] = [
  ['delivered', 'delivered'],
  ['retried', 'retried'],
  ['failed', 'failed'],
  ['canceled', 'canceled'],
];
const WORKFLOW_SERIES: readonly [string, UsageMetric][] = [
  ['delivered', 'workflow_delivered'],
  ['canceled', 'workflow_canceled'],
];

/**
 * Builds the stats object from the usage buckets of the period window and of the month window
 * (as `usageSumByStep` returns them for `periodWindow` and `monthWindow`).
 */
export function buildStats(p: {
  period: SeriesWindow;
  periodBuckets: readonly UsageBucket[];
  month: SeriesWindow;
  monthBuckets: readonly UsageBucket[];
  dlqCount: number;
  pricePer100k: number;
}): UsageStats {
  const dayStarts = Array.from({ length: p.month.points }, (_, i) => p.month.from + i * DAY_MS);
  const dayX = dayStarts.map(timeText);
  const points = (xs: string[], ys: number[]): DataPoint[] =>
    xs.map((x, i) => ({ x, y: ys[i] ?? 0 }));
  const period = (metric: UsageMetric): DataPoint[] =>
    seriesPoints(p.period, p.periodBuckets, metric);
  const daily = (metric: UsageMetric): number[] =>
    seriesValues(p.monthBuckets, metric, p.month.points);

  const dailyMessages = daily('messages');
  const dailyWorkflowMessages = daily('workflow_message');
  const dailyWorkflowRuns = daily('workflow_run');
  const monthMessages = dailyMessages.reduce((sum, n) => sum + n, 0);
  return {
    days: dayStarts.map((ms) => WEEKDAYS[new Date(ms).getUTCDay()] ?? ''),
    daily_requests: dayX.map((x, i) => ({
      x,
      y: dailyMessages[i] ?? 0,
      workflow_message: dailyWorkflowMessages[i] ?? 0,
      workflow_run: dailyWorkflowRuns[i] ?? 0,
    })),
    daily_billings: points(
      dayX,
      dailyMessages.map((n) => billingOf(n, p.pricePer100k)),
    ),
    daily_bandwidths: points(dayX, daily('bandwidth')),
    daily_used: period('messages'),
    daily_used_workflow: period('workflow_message'),
    daily_queue_messages: QUEUE_SERIES.map(([id, metric]) => ({ id, data_points: period(metric) })),
    daily_workflow_messages: WORKFLOW_SERIES.map(([id, metric]) => ({
      id,
      data_points: period(metric),
    })),
    dlq_message_count: p.dlqCount,
    daily_bandwidth_used: period('bandwidth'),
    total_monthly_billing: billingOf(monthMessages, p.pricePer100k),
  };
}
