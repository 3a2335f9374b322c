/**
 * Metering: counts usage (messages created, delivery outcomes, bandwidth…) in memory and flushes
 * the counts in batches to per-minute counters (`usage_counters`). Counting is a map update, so
 * the publish and delivery paths never wait on it; the flush adds to the stored counters (an
 * UPSERT with increment), so nodes sharing a PostgreSQL database sum up, and counts survive
 * restarts once flushed. `stop()` flushes what is left.
 *
 * What a crash can lose: the counts of at most one flush interval (default 5 s). Metering is for
 * statistics and budgets, not for delivery, so it trades that for never slowing a publish.
 */
import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/logger.js';
import type { UsageCount, UsageMetric } from '../core/management.js';
import { MINUTE_MS, monthWindow } from '../core/usage-stats.js';
import type { Executor } from '../storage/driver.js';

export interface UsageMeterOptions {
  executor: Executor;
  clock: Clock;
  logger: Logger;
  /** How often counts are flushed, ms (default 5,000). */
  intervalMs?: number;
  /** How long a month total read for a budget check is reused, ms (default 1,000). */
  monthCacheMs?: number;
}

/** A month's stored total of one metric, as read at some time. */
interface MonthTotal {
  /** Start of the month, ms. */
  from: number;
  value: number;
  expiresAt: number;
}

/** Counts of one subject: `minute:metric` → value. */
type SubjectCounts = Map<string, number>;

export class UsageMeter {
  private pending = new Map<string, SubjectCounts>();
  /** Counts being written by the running flush: still counted by `monthCount`. */
  private flushing = new Map<string, SubjectCounts>();
  /** Month totals read from storage, per subject and metric. */
  private readonly monthCache = new Map<string, Map<UsageMetric, MonthTotal>>();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<number> | undefined;

  constructor(private readonly options: UsageMeterOptions) {}

  /** Counts `value` more of `metric` for an account or index, in the minute of `at` (default now). */
  add(subjectId: string, metric: UsageMetric, value: number, at = this.options.clock.now()): void {
    if (value <= 0) return;
    const minute = Math.floor(at / MINUTE_MS) * MINUTE_MS;
    let counts = this.pending.get(subjectId);
    if (!counts) this.pending.set(subjectId, (counts = new Map<string, number>()));
    const key = `${minute}:${metric}`;
    counts.set(key, (counts.get(key) ?? 0) + value);
  }

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => {
      this.runOnce().catch(() => undefined); // runOnce logs its own failures
    }, this.options.intervalMs ?? 5_000);
    this.timer.unref();
  }

  /** Stops the timer and flushes what is left. Idempotent. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.runOnce().catch(() => undefined);
  }

  /**
   * Flushes the pending counts in one write; resolves with the number of counters written. A
   * flush that is already running is awaited first, so counts are never written twice. If the
   * write fails, the counts go back to pending and the next flush retries them.
   */
  async runOnce(): Promise<number> {
    while (this.running) await this.running.catch(() => undefined);
    const batch = this.pending;
    if (batch.size === 0) return 0;
    this.pending = new Map();
    this.flushing = batch;
    const counts: UsageCount[] = [];
    for (const [subjectId, subjectCounts] of batch) {
      for (const [key, value] of subjectCounts) {
        const colon = key.indexOf(':');
        counts.push({
          subjectId,
          minute: Number(key.slice(0, colon)),
          metric: key.slice(colon + 1) as UsageMetric,
          value,
        });
      }
    }
    this.running = this.options.executor.usageAddMany({ counts }).then(
      () => {
        for (const subjectId of batch.keys()) this.monthCache.delete(subjectId);
        return counts.length;
      },
      (error: unknown) => {
        for (const c of counts) this.add(c.subjectId, c.metric, c.value, c.minute);
        this.options.logger.error({ err: error, counters: counts.length }, 'metering flush failed');
        throw error;
      },
    );
    try {
      return await this.running;
    } finally {
      this.running = undefined;
      this.flushing = new Map();
    }
  }

  /**
   * This month's total of `metric` for a subject: the stored counters (read at most once per
   * `monthCacheMs`) plus what this node has not flushed yet. Other nodes' unflushed counts are
   * not included: they arrive with their next flush.
   */
  async monthCount(subjectId: string, metric: UsageMetric, now: number): Promise<number> {
    const month = monthWindow(now);
    let perMetric = this.monthCache.get(subjectId);
    let cached = perMetric?.get(metric);
    if (!cached || cached.from !== month.from || cached.expiresAt <= now) {
      const [bucket] = await this.options.executor.usageSumByStep({
        subjectId,
        from: month.from,
        to: month.to,
        stepMs: month.to - month.from,
        metrics: [metric],
      });
      cached = {
        from: month.from,
        value: bucket?.value ?? 0,
        expiresAt: now + (this.options.monthCacheMs ?? 1_000),
      };
      if (!perMetric) {
        if (this.monthCache.size > 10_000) this.monthCache.clear();
        this.monthCache.set(subjectId, (perMetric = new Map<UsageMetric, MonthTotal>()));
      }
      perMetric.set(metric, cached);
    }
    return (
      cached.value +
      unflushed(this.pending.get(subjectId), metric, month.from) +
      unflushed(this.flushing.get(subjectId), metric, month.from)
    );
  }
}

function unflushed(counts: SubjectCounts | undefined, metric: UsageMetric, from: number): number {
  if (!counts) return 0;
  let total = 0;
  const suffix = `:${metric}`;
  for (const [key, value] of counts) {
    if (key.endsWith(suffix) && Number(key.slice(0, key.indexOf(':'))) >= from) total += value;
  }
  return total;
}
