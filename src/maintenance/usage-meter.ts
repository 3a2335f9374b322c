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
import { utcDayOf } from '../core/rate-limits.js';
import { MINUTE_MS, monthWindow } from '../core/usage-stats.js';
import type { Executor } from '../storage/driver.js';

export interface UsageMeterOptions {
  executor: Executor;
  clock: Clock;
  logger: Logger;
  /** How often counts are flushed, ms (default 5,000). */
  intervalMs?: number;
  /** How long a month or day total read for a budget or quota check is reused, ms (default 1,000). */
  monthCacheMs?: number;
}

/** A month's or a day's stored total of one metric, as read at some time. */
interface StoredTotal {
  /** Start of the month or day, ms. */
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
  /** Month and day totals read from storage, per subject and `metric:span`. */
  private readonly totals = new Map<string, Map<string, StoredTotal>>();
  /** Flushes completed so far: a read that a flush overlapped is not cached. */
  private flushes = 0;
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
        this.flushes++;
        for (const subjectId of batch.keys()) this.totals.delete(subjectId);
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
  monthCount(subjectId: string, metric: UsageMetric, now: number): Promise<number> {
    return this.windowCount(subjectId, metric, 'month', monthWindow(now), now);
  }

  /**
   * Today's (UTC) total of `metric` for a subject, with the precision of `monthCount`: exact on
   * one node, and other nodes' counts arrive with their next flush (the daily quotas).
   */
  dayCount(subjectId: string, metric: UsageMetric, now: number): Promise<number> {
    return this.windowCount(subjectId, metric, 'day', utcDayOf(now), now);
  }

  private async windowCount(
    subjectId: string,
    metric: UsageMetric,
    span: 'month' | 'day',
    window: { from: number; to: number },
    now: number,
  ): Promise<number> {
    const key = `${metric}:${span}`;
    let perSubject = this.totals.get(subjectId);
    let cached = perSubject?.get(key);
    if (!cached || cached.from !== window.from || cached.expiresAt <= now) {
      // A flush running during the read could be counted twice (stored, and still in
      // `flushing`) or not at all: read once it is over, and do not keep a read it overlapped.
      while (this.running) await this.running.catch(() => undefined);
      const flushes = this.flushes;
      const [bucket] = await this.options.executor.usageSumByStep({
        subjectId,
        from: window.from,
        to: window.to,
        stepMs: window.to - window.from,
        metrics: [metric],
      });
      cached = {
        from: window.from,
        value: bucket?.value ?? 0,
        expiresAt: flushes === this.flushes ? now + (this.options.monthCacheMs ?? 1_000) : now,
      };
      if (!perSubject) {
        if (this.totals.size > 10_000) this.totals.clear();
        this.totals.set(subjectId, (perSubject = new Map<string, StoredTotal>()));
      }
      perSubject.set(key, cached);
    }
    return (
      cached.value +
      unflushed(this.pending.get(subjectId), metric, window) +
      unflushed(this.flushing.get(subjectId), metric, window)
    );
  }
}

function unflushed(
  counts: SubjectCounts | undefined,
  metric: UsageMetric,
  window: { from: number; to: number },
): number {
  if (!counts) return 0;
  let total = 0;
  const suffix = `:${metric}`;
  for (const [key, value] of counts) {
    if (!key.endsWith(suffix)) continue;
    const minute = Number(key.slice(0, key.indexOf(':')));
    if (minute >= window.from && minute < window.to) total += value;
  }
  return total;
}
