/**
 * Fires cron schedules: at each tick a schedule produces its messages (`messages-for-tick.ts`).
 *
 * Exactly once per tick: one transaction claims the due schedules, inserts the messages they
 * produce (with their CREATED events) and advances each schedule to its next tick. A crash
 * before the commit leaves everything as it was (the tick fires on the next run), a crash after
 * it leaves the tick done; two nodes on one PostgreSQL database never claim the same schedule
 * (`scheduleClaimDue` locks with `FOR UPDATE SKIP LOCKED`, and a late claimer finds it advanced).
 *
 * Missed ticks (downtime, a long pause of this node): a due schedule fires once, for its most
 * recent tick at or before now, and its next tick is the first after now. A paused schedule is
 * not claimed at all; resuming it computes the next tick from the time of the resume.
 *
 * The loop sleeps until the earliest next tick, at most `maxIdleMs` (a schedule created or
 * resumed on another node is noticed within it; on this node `wake()` is called at once).
 */
import type { Clock } from '../core/clock.js';
import { parseCron, type CronSchedule } from '../core/cron.js';
import { FerryError } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import type { Schedule } from '../core/schedule.js';
import type { UsageRecorder } from '../core/management.js';
import type { MetricsSink } from '../core/metrics.js';
import type { Account, Message, UrlGroup } from '../core/types.js';
import type { AccountDirectory } from '../engine/accounts.js';
import { eventOf } from '../engine/records.js';
import type { Executor, ScheduleAdvance } from '../storage/driver.js';
import { isUrlDestination, messagesForTick } from './messages-for-tick.js';

export interface SchedulerOptions {
  executor: Executor;
  clock: Clock;
  /** For each account's plan limits (the settings are read against them at every tick). */
  accounts: AccountDirectory;
  logger: Logger;
  /** Header prefix (`Svc`) the stored settings were sent with. */
  prefix: string;
  /** Called after a commit that stored messages: wakes the delivery engine. */
  onFired: () => void;
  /** Counts the produced messages (metering) once their commit succeeded. */
  usage?: UsageRecorder;
  /** Tick lateness and the messages published by schedules. */
  metrics?: MetricsSink;
  /** Schedules claimed per transaction (default 200). */
  batch?: number;
  /**
   * Longest sleep (default 15 s). Bounds how late a schedule created or resumed on another node
   * is noticed; a schedule this node knows of is never fired later than its tick plus the work.
   */
  maxIdleMs?: number;
}

/** Compiled cron expressions kept, by text (a bounded cache). */
const MAX_CACHED_CRONS = 10_000;

export class Scheduler {
  private running = false;
  private timer: NodeJS.Timeout | undefined;
  private busy: Promise<void> | undefined;
  private wakePending = false;
  private readonly crons = new Map<string, CronSchedule>();
  private readonly batch: number;
  private readonly maxIdleMs: number;

  constructor(private readonly options: SchedulerOptions) {
    this.batch = options.batch ?? 200;
    this.maxIdleMs = options.maxIdleMs ?? 15_000;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.sleep(0);
  }

  /** Schedules changed on this node (created, replaced, resumed): look again now. */
  wake(): void {
    if (!this.running) return;
    if (this.busy) this.wakePending = true;
    else this.sleep(0);
  }

  /** Stops the loop and waits for a run in progress (its transaction) to finish. Idempotent. */
  async stop(): Promise<void> {
    this.running = false;
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.busy;
  }

  /**
   * Fires every schedule due at the clock's now, in batches of `batch` per transaction, and
   * returns how many ticks fired. For tests and tools; the loop calls it too.
   */
  async runOnce(): Promise<number> {
    const now = this.options.clock.now();
    let fired = 0;
    for (;;) {
      const n = await this.fireBatch(now);
      fired += n;
      if (n < this.batch) return fired;
    }
  }

  private sleep(delayMs: number): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.loop(), delayMs);
  }

  private async loop(): Promise<void> {
    if (!this.running || this.busy) return;
    this.wakePending = false;
    let delay = this.maxIdleMs;
    this.busy = (async () => {
      try {
        await this.runOnce();
        const next = await this.options.executor.scheduleNextDueAt();
        if (next !== undefined) {
          delay = Math.min(this.maxIdleMs, Math.max(0, next - this.options.clock.now()));
        }
      } catch (error) {
        this.options.logger.error({ err: error }, 'firing schedules failed; retrying in 1 s');
        delay = 1_000;
      }
    })();
    await this.busy;
    this.busy = undefined;
    if (this.running) this.sleep(this.wakePending ? 0 : delay);
  }

  /** One transaction: claim up to `batch` due schedules, store their messages, advance them. */
  private async fireBatch(now: number): Promise<number> {
    let stored: Message[] = [];
    let ticks: number[] = [];
    const fired = await this.options.executor.transaction(
      async (tx) => {
        const due = await tx.scheduleClaimDue({ now, limit: this.batch });
        if (due.length === 0) return 0;
        const accounts = new Map<string, Account | undefined>();
        const messages: Message[] = [];
        const advances: ScheduleAdvance[] = [];
        for (const schedule of due) {
          if (!accounts.has(schedule.accountId)) {
            accounts.set(schedule.accountId, await tx.accountGet({ id: schedule.accountId }));
          }
          const group = isUrlDestination(schedule.destination)
            ? undefined
            : await tx.urlGroupGet({ accountId: schedule.accountId, name: schedule.destination });
          const advance = this.fire(schedule, accounts.get(schedule.accountId), group, now);
          messages.push(...advance.messages);
          advances.push(advance);
        }
        const writes: Promise<void>[] = [tx.scheduleAdvanceMany({ advances })];
        if (messages.length > 0) {
          // Issued together: PostgreSQL pipelines them on the transaction's connection.
          const events = messages.map((m) => eventOf(m, 'CREATED', m.createdAt));
          writes.push(tx.messageInsertMany({ messages }), tx.eventInsertMany({ events }));
        }
        await Promise.all(writes);
        stored = messages;
        ticks = advances.map((a) => a.lastScheduleTime);
        return due.length;
      },
      {
        onCommit: () => {
          if (stored.length > 0) this.options.onFired();
        },
      },
    );
    const usage = this.options.usage;
    if (usage) for (const m of stored) usage.add(m.accountId, 'messages', 1, m.createdAt);
    const metrics = this.options.metrics;
    if (metrics) {
      for (const tick of ticks) metrics.scheduleLateness((now - tick) / 1000);
      for (const m of stored) metrics.published('schedule', m.accountId, 1);
    }
    return fired;
  }

  /** The tick of a due schedule: its messages and how it advances. Never throws. */
  private fire(
    schedule: Schedule,
    account: Account | undefined,
    group: UrlGroup | undefined,
    now: number,
  ): ScheduleAdvance & { messages: Message[] } {
    const log = { scheduleId: schedule.id, accountId: schedule.accountId };
    let cron: CronSchedule;
    try {
      cron = this.cronOf(schedule.cron);
    } catch (error) {
      // Checked at creation, so only a change of rules could get here: stop the schedule.
      this.options.logger.error({ ...log, err: error }, 'schedule has an invalid cron; stopped');
      const { accountId, id } = schedule;
      return { accountId, id, lastScheduleTime: now, lastMessageIds: [], messages: [] };
    }
    // The most recent tick at or before now: after downtime, missed ticks fire once, as this one.
    // Usually the due tick is the only one (its successor is after now): one computation, not two.
    const due = schedule.nextScheduleTime ?? now;
    const following = cron.next(due);
    const missedSeveral = following !== undefined && following <= now;
    const tick = missedSeveral ? Math.max(due, cron.latest(now) ?? due) : due;
    const nextScheduleTime = missedSeveral ? cron.next(now) : following;
    let messages: Message[] = [];
    if (!account) {
      this.options.logger.warn(log, 'schedule of an unknown account skipped its tick');
    } else {
      try {
        messages = messagesForTick({
          schedule,
          account,
          plan: this.options.accounts.limits(account),
          prefix: this.options.prefix,
          group,
          tick,
          now,
        });
      } catch (error) {
        // The settings were valid at creation; a lower plan limit since then (or a deleted URL
        // group) makes this tick produce nothing. The schedule keeps its rhythm.
        if (!(error instanceof FerryError)) throw error;
        this.options.logger.warn({ ...log, err: error.message }, 'schedule tick produced nothing');
      }
    }
    return {
      accountId: schedule.accountId,
      id: schedule.id,
      lastScheduleTime: tick,
      nextScheduleTime,
      lastMessageIds: messages.map((m) => m.id),
      messages,
    };
  }

  private cronOf(text: string): CronSchedule {
    let cron = this.crons.get(text);
    if (!cron) {
      cron = parseCron(text, 'cron');
      if (this.crons.size >= MAX_CACHED_CRONS) this.crons.clear();
      this.crons.set(text, cron);
    }
    return cron;
  }
}
