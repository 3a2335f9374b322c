/**
 * Writes what the engine learns: attempt outcomes (message deleted or rescheduled, the events,
 * the DLQ entry, callback messages), released leases and ACTIVE events, in batches. Nobody waits on these commits,
 * so they linger a few ms to share one, and they do not wait for an fsync (`NOT_DURABLE`).
 */
import { callbackBody, callbackMessage } from '../core/callbacks.js';
import type { Clock } from '../core/clock.js';
import { newDlqId } from '../core/ids.js';
import type { Logger } from '../core/logger.js';
import type { UsageRecorder } from '../core/management.js';
import type { AttemptOutcome, MetricsSink } from '../core/metrics.js';
import type { AttemptResult, Outcome } from '../core/retry-timing.js';
import type {
  CallbackSpec,
  ClaimedMessage,
  DlqEntry,
  EventRecord,
  Message,
} from '../core/types.js';
import { NOT_DURABLE, type Executor } from '../storage/driver.js';
import type { WorkflowRun } from '../core/workflow.js';
import { gateOf } from '../core/flow-control.js';
import { GroupCommit } from './group-commit.js';
import { eventOf } from './records.js';
import {
  applyWorkflowOutcomes,
  attemptFields,
  failsRun,
  type WorkflowOutcome,
} from './workflow-outcomes.js';

/** The message as stored, without the claim's fencing token. */
function withoutLease(message: ClaimedMessage): Message {
  const stored: Partial<ClaimedMessage> = { ...message };
  delete stored.leaseToken;
  return stored as Message;
}

/** What the engine hands to the writer when an attempt ends (or a claim is logged). */
export type Completion =
  | {
      kind: 'outcome';
      message: ClaimedMessage;
      attempt: AttemptResult;
      outcome: Outcome;
      finishedAt: number;
      dlqRetentionMs: number;
      /** The account's `max_dlq_size` (0 = no limit): older entries are evicted beyond it. */
      maxDlqSize: number;
      /**
       * The attempt's ACTIVE event, when it was still held (see OutcomeWriter.add): stored on the
       * outcome's first event (`activeAt`), one row for both, or alone if the lease was lost.
       */
      active?: EventRecord;
    }
  /**
   * Not attempted (shutdown, or its origin stalled, see origin-limit.ts): due again at `dueAt`
   * (default: now), no attempt counted.
   */
  | { kind: 'release'; message: ClaimedMessage; dueAt?: number }
  /** Not delivered and never will be (its workflow run has ended): deleted, CANCELLED. */
  | { kind: 'cancel'; message: ClaimedMessage; at: number }
  /** Log lines that need no transaction of their own (the ACTIVE event of a claim). */
  | { kind: 'events'; events: EventRecord[] };

/** What one outcome transaction writes besides the message updates. */
interface Written {
  events: EventRecord[];
  dlq: DlqEntry[];
  /** Callback and failure-callback messages. */
  messages: Message[];
  /** Final outcomes of workflow messages, applied to their runs. */
  workflow: WorkflowOutcome[];
}

export interface OutcomeWriterOptions {
  executor: Executor;
  clock: Clock;
  logger: Logger;
  /** Response bytes kept in events; the DLQ keeps the whole (capped) response. */
  eventResponseBytes: number;
  /** How long outcomes wait to share a commit. */
  lingerMs: number;
  /** Counts outcomes (`delivered`, `retried`, `failed`) once their commit succeeded. */
  usage?: UsageRecorder;
  /** Counts attempts by outcome, DLQ moves and callback messages once their commit succeeded. */
  metrics?: MetricsSink;
  /**
   * Writes a batch of only ACTIVE events and plain deliveries (no callback, workflow or
   * flow-control gate) with one `messageFinishMany` outside a transaction: on PostgreSQL one
   * statement instead of BEGIN, `SET LOCAL`, three writes and COMMIT (set in app.ts). SQLite
   * keeps its transaction (the same writes, one commit either way).
   */
  oneStatement?: boolean;
}

/**
 * Keeps each account that just got DLQ entries within its `max_dlq_size`: deletes its oldest
 * entries beyond it (in the outcome transaction, after the inserts) and returns a DLQ_EVICTED
 * event for each. The size is kept by the database, so an account under its limit costs one
 * primary-key read.
 */
async function evictBeyondLimit(
  tx: Executor,
  outcomes: readonly Extract<Completion, { kind: 'outcome' }>[],
  now: number,
): Promise<EventRecord[]> {
  const limits = new Map<string, number>();
  for (const c of outcomes) {
    if (c.outcome.kind === 'failed' && c.maxDlqSize > 0) {
      limits.set(c.message.accountId, c.maxDlqSize);
    }
  }
  const events: EventRecord[] = [];
  for (const [accountId, maxSize] of limits) {
    for (const entry of await tx.dlqEvictOldest({ accountId, maxSize })) {
      events.push(
        eventOf(entry.message, 'DLQ_EVICTED', now, {
          error: `DLQ entry ${entry.dlqId} evicted: the account's max_dlq_size (${maxSize}) was reached`,
        }),
      );
    }
  }
  return events;
}

/** A delivery whose outcome writes nothing but its deletion and its DELIVERED event. */
function isPlainDelivery(c: Completion): c is Extract<Completion, { kind: 'outcome' }> {
  if (c.kind !== 'outcome' || c.outcome.kind !== 'delivered') return false;
  const { spec } = c.message;
  return !spec.callback && !spec.workflow && gateOf(c.message) === undefined;
}

function attemptOutcome(outcome: Outcome): AttemptOutcome {
  if (outcome.kind === 'retry') return 'retried';
  if (outcome.kind === 'failed') return outcome.nonRetryable ? 'non_retryable' : 'failed';
  return 'delivered';
}

/** Releases leases, one statement per due time (now, or an origin's hold). */
async function releaseAll(
  tx: Executor,
  releases: readonly Extract<Completion, { kind: 'release' }>[],
  now: number,
): Promise<void> {
  const byDueAt = new Map<number, ClaimedMessage[]>();
  for (const { message, dueAt = now } of releases) {
    const group = byDueAt.get(dueAt);
    if (group) group.push(message);
    else byDueAt.set(dueAt, [message]);
  }
  await Promise.all(
    [...byDueAt].map(([dueAt, leases]) => tx.messageReleaseMany({ leases, dueAt })),
  );
}

/** The events of the batch's `events` completions (the ACTIVE events no outcome carried). */
function loggedEvents(batch: readonly Completion[]): EventRecord[] {
  return batch.flatMap((c) => (c.kind === 'events' ? c.events : []));
}

/** Stores the attempt's ACTIVE time on the first event of its outcome, `events[at]`. */
function carry(events: EventRecord[], at: number, active: EventRecord | undefined): void {
  const first = events[at];
  if (active && first) first.activeAt = active.time;
}

/**
 * How long a claim's ACTIVE event waits for its attempt's outcome, ms, to be written with it as
 * one row (`activeAt`): most deliveries end within it. One that takes longer is logged on its
 * own, this much later than its claim (at most twice this).
 */
const ACTIVE_HOLD_MS = 100;

export class OutcomeWriter {
  private readonly group: GroupCommit<Completion, void>;
  /**
   * Messages whose ACTIVE event is queued or being written, and that write. Batches overlap (up
   * to four in flight), and the log lists events in the order they were inserted: a batch with
   * an outcome waits for its message's ACTIVE when that is in an earlier batch still running,
   * so the outcome never comes before it (on PostgreSQL the later batch's insert could run
   * first). An ACTIVE in the same batch is inserted first anyway.
   */
  private readonly activeWrites = new Map<string, Promise<void>>();
  /**
   * ACTIVE events waiting for their attempt's outcome, by message id: `young` since the last
   * sweep, `old` since the one before; each sweep logs the old and ages the young.
   */
  private young = new Map<string, EventRecord>();
  private old = new Map<string, EventRecord>();
  private sweeper: NodeJS.Timeout | undefined;

  constructor(private readonly options: OutcomeWriterOptions) {
    this.group = new GroupCommit({
      commit: (batch) => this.write(batch),
      maxBatch: 1_000,
      maxInFlight: 4,
      lingerMs: options.lingerMs,
    });
  }

  /**
   * Queues a completion; resolves once it is written (or its write failed and was logged). A
   * claim's ACTIVE events are held (at most 2 × ACTIVE_HOLD_MS) for their attempts' outcomes:
   * an outcome that finds its ACTIVE event held takes it along, and the two are written as one
   * row, which lists show as both events. A held event resolves at once.
   */
  add(completion: Completion): Promise<void> {
    if (completion.kind === 'events') {
      const logged: EventRecord[] = [];
      for (const event of completion.events) {
        if (event.state === 'ACTIVE') this.young.set(event.messageId, event);
        else logged.push(event);
      }
      this.sweep();
      return logged.length > 0 ? this.logEvents(logged) : Promise.resolve();
    }
    const id = completion.message.id;
    const active = this.young.get(id) ?? this.old.get(id);
    if (active) {
      this.young.delete(id);
      this.old.delete(id);
      // The same attempt: its outcome's first event repeats the ACTIVE event's columns.
      if (completion.kind === 'outcome' && active.retried === completion.message.retried) {
        completion.active = active; // the engine's object, made for this attempt alone
        return this.group.add(completion);
      }
      void this.logEvents([active]); // before the completion: in its batch or an earlier one
    }
    return this.group.add(completion);
  }

  /** Resolves when everything queued so far is written, held ACTIVE events included. */
  drain(): Promise<void> {
    const held = [...this.old.values(), ...this.young.values()];
    this.old = new Map();
    this.young = new Map();
    if (held.length > 0) void this.logEvents(held);
    return this.group.drain();
  }

  /** Logs the events held since the last sweep, ages the rest, and plans the next sweep. */
  private sweep(): void {
    if (this.sweeper) return;
    this.sweeper = setTimeout(() => {
      this.sweeper = undefined;
      const expired = [...this.old.values()];
      this.old = this.young;
      this.young = new Map();
      if (expired.length > 0) void this.logEvents(expired);
      if (this.old.size > 0) this.sweep();
    }, ACTIVE_HOLD_MS);
    this.sweeper.unref();
  }

  /** Writes events (ACTIVE ones no outcome took), remembered until written for ordering. */
  private logEvents(events: EventRecord[]): Promise<void> {
    const written = this.group.add({ kind: 'events', events });
    for (const { messageId } of events) this.activeWrites.set(messageId, written);
    const forget = (): void => {
      for (const { messageId } of events) {
        if (this.activeWrites.get(messageId) === written) this.activeWrites.delete(messageId);
      }
    };
    written.then(forget, forget);
    return written;
  }

  private async write(batch: Completion[]): Promise<void[]> {
    try {
      await this.activeWritten(batch);
      await this.applyCompletions(batch);
    } catch (error) {
      // Unwritten outcomes leave the messages leased; they are delivered again after the
      // lease expires (at-least-once), so this loses nothing.
      const messageIds = batch.flatMap((c) =>
        c.kind === 'events' ? c.events.map((e) => e.messageId) : [c.message.id],
      );
      this.options.logger.error({ err: error, messageIds }, 'writing outcomes failed');
    }
    return [];
  }

  /** Waits for the ACTIVE events of this batch's messages that earlier batches are writing. */
  private async activeWritten(batch: Completion[]): Promise<void> {
    if (this.activeWrites.size === 0) return;
    const own = new Set<string>();
    for (const c of batch) if (c.kind === 'events') for (const e of c.events) own.add(e.messageId);
    const earlier = new Set<Promise<void>>();
    for (const c of batch) {
      if (c.kind === 'events' || own.has(c.message.id)) continue;
      const write = this.activeWrites.get(c.message.id);
      if (write) earlier.add(write);
    }
    if (earlier.size > 0) await Promise.all(earlier);
  }

  private async applyCompletions(batch: Completion[]): Promise<void> {
    if (
      this.options.oneStatement &&
      batch.every((c) => c.kind === 'events' || isPlainDelivery(c))
    ) {
      await this.finishPlain(batch);
      return;
    }
    const now = this.options.clock.now();
    let created: Message[] = [];
    let dlq: DlqEntry[] = [];
    let failedRuns: WorkflowRun[] = [];
    const applied: Extract<Completion, { kind: 'outcome' }>[] = [];
    await this.options.executor.transaction(async (tx) => {
      // ACTIVE events first: a message's ACTIVE always precedes its outcome in the log. These
      // writes are independent, so they are issued together: PostgreSQL pipelines them instead
      // of waiting a round trip for each; SQLite runs them in call order.
      const logged = loggedEvents(batch);
      const releases = batch.filter((c) => c.kind === 'release');
      const outcomes = batch.filter((c) => c.kind === 'outcome');
      const cancels = batch.filter((c) => c.kind === 'cancel');
      const finals = [...outcomes.filter((c) => c.outcome.kind !== 'retry'), ...cancels];
      const retries = outcomes.filter((c) => c.outcome.kind === 'retry');
      const [, , deletedIds, retriedIds] = await Promise.all([
        logged.length > 0 ? tx.eventInsertMany({ events: logged }) : undefined,
        releases.length > 0 ? releaseAll(tx, releases, now) : undefined,
        finals.length > 0
          ? tx.messageDeleteLeasedMany({ leases: finals.map((c) => c.message) })
          : [],
        retries.length > 0
          ? tx.messageRetryManyLeased({
              retries: retries.map((c) => ({
                id: c.message.id,
                leaseToken: c.message.leaseToken,
                dueAt: c.outcome.kind === 'retry' ? c.outcome.dueAt : now,
                retried: c.message.retried + 1,
              })),
            })
          : [],
      ]);
      const deleted = new Set(deletedIds);
      const retried = new Set(retriedIds);
      const out: Written = { events: [], dlq: [], messages: [], workflow: [] };
      for (const c of cancels) {
        if (deleted.has(c.message.id)) out.events.push(eventOf(c.message, 'CANCELLED', c.at));
      }
      for (const c of outcomes) {
        // A completion whose lease was lost (cancelled, or re-claimed after expiry) writes nothing.
        if (!deleted.has(c.message.id) && !retried.has(c.message.id)) {
          // The lease was lost: no outcome is written, but the attempt was made.
          if (c.active) out.events.unshift(c.active);
          continue;
        }
        const at = out.events.length;
        this.recordOutcome(c, out);
        carry(out.events, at, c.active);
        applied.push(c);
      }
      if (out.workflow.length > 0) {
        const runs = await applyWorkflowOutcomes(tx, out.workflow);
        out.messages.push(...runs.created);
        failedRuns = runs.failedRuns;
      }
      for (const m of out.messages) out.events.push(eventOf(m, 'CREATED', m.createdAt));
      const [, , evicted] = await Promise.all([
        out.messages.length > 0 ? tx.messageInsertMany({ messages: out.messages }) : undefined,
        out.events.length > 0 ? tx.eventInsertMany({ events: out.events }) : undefined,
        out.dlq.length > 0
          ? tx.dlqInsertMany({ entries: out.dlq }).then(() => evictBeyondLimit(tx, applied, now))
          : [],
      ]);
      if (evicted.length > 0) await tx.eventInsertMany({ events: evicted });
      created = out.messages;
      dlq = out.dlq;
    }, NOT_DURABLE);
    this.count(applied, dlq, created);
    if (failedRuns.length > 0) this.options.metrics?.workflowRuns('failed', failedRuns.length);
    const usage = this.options.usage;
    if (!usage) return;
    for (const { message, outcome, finishedAt } of applied) {
      const metric = outcome.kind === 'retry' ? 'retried' : outcome.kind;
      usage.add(message.accountId, metric, 1, finishedAt);
    }
    // Callback messages are messages like any other: metered and billed.
    for (const m of created) {
      usage.add(m.accountId, 'messages', 1, m.createdAt);
      if (m.spec.workflow) usage.add(m.accountId, 'workflow_message', 1, m.createdAt);
    }
  }

  /** See OutcomeWriterOptions.oneStatement: the batch holds only events and plain deliveries. */
  private async finishPlain(batch: Completion[]): Promise<void> {
    const events = loggedEvents(batch);
    const finished: { lease: ClaimedMessage; events: EventRecord[]; unheld?: EventRecord[] }[] = [];
    const outcomes: Extract<Completion, { kind: 'outcome' }>[] = [];
    for (const c of batch) {
      if (c.kind !== 'outcome') continue;
      const out: Written = { events: [], dlq: [], messages: [], workflow: [] };
      this.recordOutcome(c, out);
      const active = c.active;
      carry(out.events, 0, active);
      finished.push({ lease: c.message, events: out.events, ...(active && { unheld: [active] }) });
      outcomes.push(c);
    }
    const started = performance.now();
    const deleted = new Set(await this.options.executor.messageFinishMany({ events, finished }));
    // What the transaction's commit would have been timed as (metrics/commit-timing.ts).
    this.options.metrics?.storageCommit((performance.now() - started) / 1000, false);
    const applied = outcomes.filter((c) => deleted.has(c.message.id));
    this.count(applied, [], []);
    for (const { message, finishedAt } of applied) {
      this.options.usage?.add(message.accountId, 'delivered', 1, finishedAt);
    }
  }

  /** Metrics and the debug log line of each attempt, once the commit has succeeded. */
  private count(
    applied: readonly Extract<Completion, { kind: 'outcome' }>[],
    dlq: readonly DlqEntry[],
    created: readonly Message[],
  ): void {
    const { metrics, logger } = this.options;
    for (const { message, outcome, attempt } of applied) {
      const kind = attemptOutcome(outcome);
      metrics?.attempted(kind, message.accountId);
      logger.debug(
        {
          messageId: message.id,
          outcome: kind,
          retried: message.retried,
          status: attempt.kind === 'response' ? attempt.status : undefined,
          // Ferry's own text (a refused address, a timeout, a connection error), never the URL.
          error: attempt.kind === 'error' ? attempt.error : undefined,
        },
        'delivery attempt',
      );
    }
    for (const entry of dlq) {
      metrics?.movedToDlq(entry.message.accountId, 1);
      logger.info(
        {
          messageId: entry.message.id,
          dlqId: entry.dlqId,
          // The last response's status, or without one Ferry's own text of what failed.
          status: entry.responseStatus,
          error: entry.error,
        },
        'message failed: moved to the DLQ',
      );
    }
    // Workflow messages are counted from their metering (see app.ts).
    for (const m of created) if (!m.spec.workflow) metrics?.published('callback', m.accountId, 1);
  }

  private recordOutcome(c: Extract<Completion, { kind: 'outcome' }>, out: Written): void {
    const { message, attempt, outcome, finishedAt } = c;
    const { events, dlq } = out;
    // The message without its lease, built only when a callback, the DLQ or a run needs it:
    // a plain delivery (the hot path) never copies it.
    let stored: Message | undefined;
    const source = (): Message => (stored ??= withoutLease(message));
    const call = (kind: 'callback' | 'failure-callback', spec: CallbackSpec, dlqId?: string) => {
      const body = callbackBody({ source: source(), attempt, dlqId });
      out.messages.push(callbackMessage({ source: source(), kind, spec, body, now: finishedAt }));
    };
    if (message.spec.callback) call('callback', message.spec.callback);
    const response =
      attempt.kind === 'response'
        ? {
            responseStatus: attempt.status,
            responseHeader: attempt.headers,
            responseBody: attempt.body.subarray(0, this.options.eventResponseBytes),
          }
        : {};
    switch (outcome.kind) {
      case 'delivered':
        events.push(eventOf(message, 'DELIVERED', finishedAt, response));
        if (message.spec.workflow?.callType === 'failureCall') {
          out.workflow.push({ source: source(), attempt, failed: false, finishedAt });
        }
        return;
      case 'retry':
        events.push(eventOf(message, 'ERROR', finishedAt, { ...response, error: outcome.error }));
        events.push(
          eventOf(message, 'RETRY', finishedAt, {
            retried: message.retried + 1,
            nextDeliveryTime: outcome.dueAt,
          }),
        );
        return;
      case 'failed': {
        events.push(eventOf(message, 'ERROR', finishedAt, { ...response, error: outcome.error }));
        events.push(eventOf(message, 'FAILED', finishedAt, { error: outcome.error }));
        if (failsRun(message)) {
          // The run fails instead: it goes to the workflow DLQ (see workflow-outcomes.ts).
          out.workflow.push({ source: source(), attempt, failed: true, finishedAt });
          return;
        }
        const dlqId = newDlqId(finishedAt);
        dlq.push({
          dlqId,
          message: source(),
          createdAt: finishedAt,
          expiresAt: finishedAt + c.dlqRetentionMs,
          ...attemptFields(attempt),
        });
        if (message.spec.failureCallback) {
          call('failure-callback', message.spec.failureCallback, dlqId);
        }
        return;
      }
    }
  }
}
