/**
 * Writes published messages with group commit (see group-commit.ts): publishes that arrive while
 * commits are running are written together in the next transaction, and each caller is answered
 * only after its messages are durable. One fsync then covers a whole batch, which is where publish
 * throughput comes from (not from weakening durability).
 */
import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/logger.js';
import type { UsageRecorder } from '../core/management.js';
import type { MetricsSink, PublishKind } from '../core/metrics.js';
import {
  type ClaimedMessage,
  type EventRecord,
  type Message,
  leasedMessage,
} from '../core/types.js';
import type { WorkflowRun, WorkflowStep } from '../core/workflow.js';
import type { Executor } from '../storage/driver.js';
import { GroupCommit } from './group-commit.js';
import { eventOf } from './records.js';
import { gateOf } from '../core/flow-control.js';

/** One message to publish, with its deduplication key when it has one. */
export interface PublishItem {
  message: Message;
  /** Deduplication key (an explicit id, or a content hash); scoped to the account. */
  dedupKey?: string;
  /**
   * A workflow message: `start` creates the run (a run id that exists already makes the item a
   * duplicate, like a deduplication id); `append` adds the message to the run's history.
   */
  workflow?: { kind: 'start'; run: WorkflowRun } | { kind: 'append' } | { kind: 'none' };
  /** How it was published, for metrics (default `publish`; workflow messages count as `workflow`). */
  kind?: Extract<PublishKind, 'publish' | 'batch'>;
}

export interface PublishResult {
  messageId: string;
  /** True when an earlier message within the window holds the key; nothing was stored. */
  deduplicated: boolean;
}

/** The engine's side of a hand-off (Engine.reserve, handOff, cancelHandOff). */
export interface HandOff {
  reserve(message: Message, now: number): { token: string; until: number } | undefined;
  handOff(messages: readonly ClaimedMessage[]): void;
  cancelHandOff(ids: Iterable<string>): void;
}

export interface PublisherOptions {
  executor: Executor;
  clock: Clock;
  logger: Logger;
  /** Deduplication window (10 minutes by the API contract). */
  dedupWindowMs?: number;
  /** Most messages written in one transaction. */
  maxBatch?: number;
  /** Counts the messages created (`messages`), once their commit succeeded. */
  usage?: UsageRecorder;
  /** Counts published messages by kind (workflow messages are counted from `usage`, see app.ts). */
  metrics?: MetricsSink;
  /**
   * Batches of publishes into flow-control keys or queues committing at once (default: as many
   * as other batches). Such a batch holds its gates' row locks until its commit, fsync included
   * (PostgreSQL), so concurrent batches sharing a key would run one after the other anyway,
   * queued on those locks; with 1 they form one larger batch instead.
   */
  gatedMaxInFlight?: number;
  /**
   * Due times for messages to destinations the engine holds back (Engine.publishSchedule): such
   * a message due now is stored at its place in the destination's schedule instead.
   */
  schedule?: (now: number) => ((url: string) => number | undefined) | undefined;
  /**
   * Writes a commit of plain publishes (no deduplication, no workflow, at most
   * {@link MAX_STEP_ROWS} messages) with one `messagePublishMany` outside a transaction: on
   * PostgreSQL one statement instead of BEGIN, two inserts and COMMIT (app.ts). SQLite keeps the
   * transaction, whose commit wakes the engine before the WAL's fsync; a write outside one is
   * reported only once durable.
   */
  oneStatement?: boolean;
  /**
   * A message due now that the engine has a slot for is stored leased to it, and handed to it
   * once committed (before the fsync, like the wake-up a claim would follow): its delivery needs
   * no claim to read it back. With `oneStatement` (PostgreSQL) only one-statement publishes do
   * this, and the statement keeps a lease only within the account's `max_global_parallelism`
   * across nodes (`maxInFlightByPlan`); on SQLite every publish may.
   */
  handOff?: HandOff;
  /** `max_global_parallelism` by plan, for the one-statement publish's leases (see handOff). */
  maxInFlightByPlan?: Record<string, number>;
}

/**
 * A commit of more than {@link MAX_STEP_ROWS} messages is written in steps, each in a turn of the
 * event loop of its own. A step's size follows the time the last one held the event loop, aiming
 * at {@link STEP_TARGET_MS}: on SQLite a step is synchronous (its whole time), on PostgreSQL only
 * the building of its statements is (the round trip is awaited), so PostgreSQL keeps steps of
 * {@link MAX_STEP_ROWS} and no more round trips. Measured with scripts/measure-fanout.mjs (SQLite,
 * 1,000 endpoints, a 1 MiB body stored once, this 2-core machine at a load average of ~10, runs
 * of 5 publishes): the server's longest turn took 17 to 24 ms of CPU with fixed steps of 100
 * messages and their CREATED events, 10 to 13 ms with 50, and no less with 25: what is left is
 * the transaction's COMMIT (SQLite writes its pages to the WAL), which no step size shortens.
 * With these sizes: 12 to 14 ms, against 19 to 22 ms before, at a load of 11 to 12.6; the
 * publish's CPU time was the same (docs/security.md, "Work per request").
 */
const MAX_STEP_ROWS = 100;
const MIN_STEP_ROWS = 25;
/** The first step's size, before a step was timed. */
const FIRST_STEP_ROWS = 50;
/** Time one step may hold the event loop, ms. */
const STEP_TARGET_MS = 10;

/** Rows of the next step, from the last step's rows and the time it held the event loop. */
export function nextStepRows(rows: number, heldMs: number): number {
  const fit = Math.floor((STEP_TARGET_MS * rows) / Math.max(heldMs, 0.001));
  return Math.min(MAX_STEP_ROWS, Math.max(MIN_STEP_ROWS, fit));
}

/** Lets the event loop serve I/O (other requests) before going on. */
const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

export class Publisher {
  private readonly group: GroupCommit<PublishItem[], PublishResult[]>;
  /** Publishes with a flow-control key or a queue (see `gatedMaxInFlight`). */
  private readonly gated: GroupCommit<PublishItem[], PublishResult[]>;
  private readonly dedupWindowMs: number;

  constructor(private readonly options: PublisherOptions) {
    this.dedupWindowMs = options.dedupWindowMs ?? 10 * 60_000;
    this.group = new GroupCommit({
      commit: (batch) => this.commit(batch),
      maxBatch: options.maxBatch ?? 2_000,
      // Many batches may wait for their fsync at once (they share fsyncs, see WalSync), so a
      // slow fsync does not stop the next publishes from committing and being delivered.
      maxInFlight: 16,
      weight: (items) => items.length,
    });
    this.gated =
      options.gatedMaxInFlight === undefined
        ? this.group
        : new GroupCommit({
            commit: (batch) => this.commit(batch),
            maxBatch: options.maxBatch ?? 2_000,
            maxInFlight: options.gatedMaxInFlight,
            weight: (items) => items.length,
          });
  }

  /** Stores the items durably; resolves with one result per item, in order. */
  publish(items: PublishItem[]): Promise<PublishResult[]> {
    const gated =
      this.gated !== this.group && items.some((item) => gateOf(item.message) !== undefined);
    return (gated ? this.gated : this.group).add(items);
  }

  /** Resolves when everything published so far is committed (used by shutdown). */
  async drain(): Promise<void> {
    await Promise.all([this.group.drain(), this.gated === this.group || this.gated.drain()]);
  }

  /** The message, or a copy due at its place in its destination's schedule (see `schedule`). */
  private scheduled(
    message: Message,
    now: number,
    schedule: ((url: string) => number | undefined) | undefined,
  ): Message {
    if (!schedule || message.dueAt > now || gateOf(message) !== undefined) return message;
    const dueAt = schedule(message.url);
    return dueAt === undefined ? message : { ...message, dueAt };
  }

  private async commit(batch: PublishItem[][]): Promise<PublishResult[][]> {
    const now = this.options.clock.now();
    let stored: Message[] = [];
    const schedule = this.options.schedule?.(now);
    const executor = this.options.executor;
    const handOff = this.options.handOff;
    /** Messages given leased to the engine (see PublisherOptions.handOff), and if started. */
    const handed: ClaimedMessage[] = [];
    /** The ids of those stored leased, when not all were (a one-statement publish). */
    let kept: Set<string> | undefined;
    let started = false;
    const start = (): void => {
      started = true;
      if (!handOff || handed.length === 0) return;
      const ours = kept;
      if (ours === undefined) return handOff.handOff(handed);
      handOff.cancelHandOff(handed.filter((m) => !ours.has(m.id)).map((m) => m.id));
      handOff.handOff(handed.filter((m) => ours.has(m.id)));
    };
    const write = async (tx: Executor, oneStatement: boolean): Promise<PublishResult[][]> => {
      // Where leases are counted (see PublisherOptions.handOff).
      const mayHandOff = oneStatement || this.options.oneStatement !== true;
      const messages: Message[] = [];
      const events: EventRecord[] = [];
      const perRequest: PublishResult[][] = [];
      for (const items of batch) {
        const results: PublishResult[] = [];
        for (const { message, dedupKey, workflow } of items) {
          if (workflow?.kind === 'start' && !(await tx.workflowRunInsert({ run: workflow.run }))) {
            results.push({ messageId: message.id, deduplicated: true });
            continue;
          }
          if (dedupKey !== undefined) {
            const claim = await tx.dedupClaim({
              accountId: message.accountId,
              key: dedupKey,
              messageId: message.id,
              now,
              expiresAt: now + this.dedupWindowMs,
            });
            if (claim.duplicate) {
              results.push({ messageId: claim.messageId, deduplicated: true });
              continue;
            }
          }
          if (workflow?.kind === 'start' || workflow?.kind === 'append') {
            await tx.workflowStepAppend({ step: historyEntry(message) });
          }
          let toStore = this.scheduled(message, now, schedule);
          const lease = mayHandOff ? handOff?.reserve(toStore, now) : undefined;
          if (lease) {
            const leased = leasedMessage(toStore, lease.until, lease.token);
            handed.push(leased);
            toStore = leased;
          }
          messages.push(toStore);
          events.push(eventOf(toStore, 'CREATED', toStore.createdAt));
          results.push({ messageId: message.id, deduplicated: false });
        }
        perRequest.push(results);
      }
      if (oneStatement) {
        const started = performance.now();
        const leaseLimits =
          handed.length > 0
            ? { now, maxInFlightByPlan: this.options.maxInFlightByPlan ?? {} }
            : undefined;
        kept = new Set(await tx.messagePublishMany({ messages, events, leaseLimits }));
        // What a transaction's commit would have been timed as (commit-timing.ts).
        this.options.metrics?.storageCommit((performance.now() - started) / 1000, true);
        stored = messages;
        return perRequest;
      }
      // Issued together: PostgreSQL pipelines them on the transaction's connection instead
      // of a round trip each; SQLite runs them in call order as they are issued. A large
      // commit (a fan-out to 1,000 endpoints, a batch) is written in steps (see
      // MAX_STEP_ROWS) with a turn of the event loop before each, still in this one
      // transaction: it stays all-or-nothing and is durable before anyone is answered, while
      // other requests are served in between (on SQLite, those that need the database wait for
      // the commit, as they would for any transaction: one writer; on PostgreSQL they run on
      // other connections). The first step waits for a turn too: the request was parsed and
      // its messages prepared in the turn that started this commit, and a profile of the
      // longest turn of a 1,000-endpoint publish found both in it, with the first step.
      const stepped = messages.length > MAX_STEP_ROWS;
      let rows = stepped ? FIRST_STEP_ROWS : messages.length;
      for (let i = 0; i < messages.length;) {
        if (stepped) await nextTurn();
        const started = performance.now();
        const step = Promise.all([
          tx.messageInsertMany({ messages: messages.slice(i, i + rows) }),
          tx.eventInsertMany({ events: events.slice(i, i + rows) }),
        ]);
        const heldMs = performance.now() - started;
        await step;
        i += rows;
        rows = nextStepRows(rows, heldMs);
      }
      stored = messages;
      return perRequest;
    };
    let results: PublishResult[][];
    try {
      results = this.isOneStatement(batch)
        ? await write(executor, true).then((written) => {
            start();
            return written;
          })
        : // No wake-up here: the executor's due-time watch (due-watch.ts) wakes the engine once
          // this commits, before the fsync, and handed messages start then. The answer waits for
          // the fsync, the delivery does not have to. A power loss in between can take a message
          // that was delivered but never acknowledged, which a publisher retrying its
          // unacknowledged publish turns into a duplicate: at least once still holds.
          await executor.transaction((tx) => write(tx, false), { onCommit: start });
    } catch (error) {
      if (!started) handOff?.cancelHandOff(handed.map((m) => m.id));
      throw error;
    }
    // By id: a message stored at its place in its destination's schedule is a copy (`scheduled`).
    const storedIds = new Set(stored.map((m) => m.id));
    this.countPublished(batch, storedIds);
    const usage = this.options.usage;
    if (usage) {
      for (const m of stored) {
        usage.add(m.accountId, 'messages', 1, now);
        if (m.spec.workflow) usage.add(m.accountId, 'workflow_message', 1, now);
      }
      for (const items of batch) {
        for (const item of items) {
          if (item.workflow?.kind === 'start' && storedIds.has(item.message.id)) {
            usage.add(item.message.accountId, 'workflow_run', 1, now);
          }
        }
      }
    }
    return results;
  }

  /** See PublisherOptions.oneStatement. */
  private isOneStatement(batch: PublishItem[][]): boolean {
    if (this.options.oneStatement !== true) return false;
    let count = 0;
    for (const items of batch) {
      for (const { dedupKey, workflow } of items) {
        if (dedupKey !== undefined || (workflow !== undefined && workflow.kind !== 'none')) {
          return false;
        }
      }
      count += items.length;
    }
    return count <= MAX_STEP_ROWS;
  }

  private countPublished(batch: PublishItem[][], storedIds: ReadonlySet<string>): void {
    const metrics = this.options.metrics;
    if (!metrics || storedIds.size === 0) return;
    for (const items of batch) {
      for (const { message, kind } of items) {
        if (!message.spec.workflow && storedIds.has(message.id)) {
          metrics.published(kind ?? 'publish', message.accountId, 1);
        }
      }
    }
  }
}

/**
 * The history entry a workflow message adds to its run: its id, the body it carries, and what it
 * is delivered with (retries, retry delay, forwarded headers), which the logs show.
 */
export function historyEntry(message: Message): WorkflowStep {
  const wf = message.spec.workflow;
  if (!wf) throw new Error(`message ${message.id} is not a workflow message`);
  const step: WorkflowStep = {
    accountId: message.accountId,
    runId: wf.runId,
    seq: 0,
    messageId: message.id,
    callType: wf.callType,
    body: message.body,
    createdAt: message.createdAt,
    retries: message.maxRetries,
    headersJson: JSON.stringify(message.spec.headers),
  };
  const retryDelay = message.spec.retryDelayExpression;
  if (retryDelay !== undefined) step.retryDelay = retryDelay;
  return step;
}
