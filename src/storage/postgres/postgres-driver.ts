/**
 * The PostgreSQL driver: many Ferry nodes share one database. Correctness across nodes comes
 * from the database alone: row locks skipped by concurrent claimers (`FOR UPDATE SKIP LOCKED`),
 * fencing tokens on leases, an advisory lock around migrations, and LISTEN/NOTIFY for wake-ups.
 */
import postgres from 'postgres';
import {
  isLeased,
  type ClaimedMessage,
  type DlqEntry,
  type EventRecord,
  type Message,
} from '../../core/types.js';
import type {
  BodyUsage,
  DlqInsertManyParams,
  Driver,
  EventInsertManyParams,
  Executor,
  TransactionOptions,
  MessageInsertManyParams,
  MessageClaimDueLimitedParams,
  MessageClaimDueLimitedResult,
  MessageFinishManyParams,
  MessagePublishManyParams,
  ScheduleUpsertParams,
  ScheduleUpsertResult,
  WorkflowStepAppendParams,
} from '../driver.js';
import { NOT_DURABLE } from '../driver.js';
import * as accounts from './postgres-accounts.js';
import * as bodies from './postgres-bodies.js';
import { storeBodies } from './postgres-bodies.js';
import { bodiesToStore, type BodyToStore, inlineBytes } from '../sql/bodies.js';
import { chunkByBytes, fitsOneStatement, insertTogether } from './postgres-batch.js';
import * as dedup from './postgres-dedup.js';
import * as dlq from './postgres-dlq.js';
import * as events from './postgres-events.js';
import * as flowGates from './postgres-flow-gates.js';
import { gateOf } from '../../core/flow-control.js';
import * as management from './postgres-management.js';
import * as messages from './postgres-messages.js';
import * as rateCounters from './postgres-rate-counters.js';
import * as schedules from './postgres-schedules.js';
import * as workflows from './postgres-workflows.js';
import * as stats from './postgres-stats.js';
import { migratePostgres, postgresMigrationStatus, quoteIdentifier } from './postgres-migrate.js';
import { type Db, transactional } from './postgres-rows.js';
import * as urlGroups from './postgres-url-groups.js';
import { wakeChannelOf } from './postgres-wake.js';
import { type CommitGuard, Deadline } from '../storage-deadline.js';

const isGated = (m: Message): boolean => gateOf(m) !== undefined;

/** A message given leased (`ClaimedMessage`) as stored unleased: due from its creation. */
function storedUnleased(message: Message): Message {
  if (!isLeased(message)) return message;
  const stored: Partial<ClaimedMessage> = { ...message, dueAt: message.createdAt };
  delete stored.leaseToken;
  return stored as Message;
}

export interface PostgresDriverOptions {
  /** Connection URL, `postgres://user:password@host:port/database`. */
  url: string;
  /**
   * Schema holding Ferry's tables (created by `migrate()` if missing); every connection gets it
   * as its `search_path`. Lets several Ferry deployments, or test runs, share one database.
   * Default `public`.
   */
  schema?: string;
  /** Connections in the pool (LISTEN uses one more of its own). Default 10. */
  max?: number;
  /**
   * Called with the text and parameters of every statement sent (diagnostics and the query plan
   * test, which EXPLAINs what the driver really runs).
   */
  trace?: (text: string, params: readonly unknown[]) => void;
  /**
   * Longest wait for the database, ms (default 5000): an operation or transaction not answered
   * by then rejects with a `StorageNoAnswerError` (see storage-deadline.ts), so a request never
   * hangs on a server that stopped answering. Migrations are not bounded.
   */
  timeoutMs?: number;
  /**
   * Longest wait of a publish given leases for the claim lock, ms (default
   * {@link DEFAULT_PUBLISH_LOCK_WAIT_MS}); past it the publish stores its messages unleased, for a
   * claim to take (migration 015). At least 1 ms (PostgreSQL reads a `lock_timeout` of 0 as no
   * limit). Tests lengthen it to watch a publish wait.
   */
  publishLockWaitMs?: number;
}

/**
 * Default of {@link PostgresDriverOptions.publishLockWaitMs}: longer than a publish holds the lock
 * (its statement and commit, about a millisecond), short enough that a publish behind a long
 * claim is answered without waiting for it.
 */
export const DEFAULT_PUBLISH_LOCK_WAIT_MS = 5;

/** Default of {@link PostgresDriverOptions.timeoutMs}. */
export const DEFAULT_POSTGRES_TIMEOUT_MS = 5_000;

/** Runs `fn` in a transaction (the pool) or in a savepoint (already in a transaction). */
type Begin = <T>(fn: (tx: postgres.TransactionSql) => Promise<T>) => Promise<T>;

/**
 * Registers an operation so `close()` can wait for it, and bounds it by the deadline (`read`: it
 * writes nothing, see storage-deadline.ts); identity inside a transaction.
 */
type Track = <T>(operation: Promise<T>, read?: boolean) => Promise<T>;
const untracked: Track = (operation) => operation;

/**
 * Errors of postgres.js and the socket that mean the connection broke (or the server ended the
 * session, as a fast shutdown does): a COMMIT sent before them may or may not have been applied.
 */
const CONNECTION_LOSS = new Set([
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
]);

export function isConnectionLoss(error: unknown): boolean {
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' && CONNECTION_LOSS.has(code);
}

/** Operations of the contract that only read, named by their verb (`messageGet`, `dlqList`…). */
const READ_VERB =
  /(Get|GetByEmail|List|Count|CountAll|CountByState|CountInFlight|NextDueAt|SumByStep|Usage|Status)$/;

/**
 * Every operation of the contract over one `Db`: the pool (each statement its own transaction)
 * or a transaction's connection. The SQL lives in one module per table.
 */
class PostgresExecutor implements Executor {
  /**
   * @param track On the pool: registers an operation for `close()` and bounds it by the deadline.
   * @param pool On the pool only: the deadline of a whole transaction, and `close()`'s tracking;
   *   and `fixed`, a pool whose sessions plan every statement generically
   *   (`plan_cache_mode = force_generic_plan`), for the engine's claim and outcome statements.
   *   They run once or twice per delivery, their texts never change, and their generic plans
   *   read by index. With the planner's own choice, a table of some size (200,000 waiting
   *   messages) had them planned anew at every execution: its estimate for a range on a
   *   parameter or an array parameter's rows made the generic plan look dearer than planning
   *   again, which cost the claim 0.62 instead of 0.24 ms and the outcome 0.30 instead of 0.15
   *   (docs/benchmarks-log.md). Other statements keep the planner's choice: a list's filters are
   *   planned with their values.
   */
  constructor(
    private readonly db: Db,
    private readonly begin: Begin,
    private readonly track: Track = untracked,
    private readonly pool?: {
      deadline: Deadline;
      hold: Track;
      fixed: Db;
      publishLockWaitMs: number;
    },
  ) {}

  /**
   * On the pool, `sql.begin` reserves a connection and runs BEGIN … COMMIT (ROLLBACK if `fn`
   * throws or any statement failed). On a `Tx`, a nested call runs inside the outer transaction
   * as a savepoint: if `fn` throws, only its own writes are undone and the error propagates.
   * (SQLite nests the same way with better-sqlite3's savepoints.)
   */
  transaction<T>(fn: (tx: Executor) => Promise<T>, options?: TransactionOptions): Promise<T> {
    const pool = this.pool;
    const run = (guard?: CommitGuard): Promise<T> =>
      this.begin(async (tx) => {
        guard?.started();
        // Like SQLite skipping its WAL fsync wait: COMMIT returns before the WAL flush; a crash
        // of the server may lose the transaction, never reorder it, and never corrupt anything.
        if (options?.durable === false && pool) {
          // Sent without waiting for its answer: the next statements follow it on the same
          // connection (pipelined); if it failed, they fail too and the transaction rolls back.
          tx`SET LOCAL synchronous_commit = off`.execute().catch(() => undefined);
        }
        const result = await fn(new PostgresExecutor(tx, savepointOf(tx)));
        // Past the deadline this throws, and the transaction rolls back instead of committing:
        // the caller was told nothing was stored, so nothing may be.
        guard?.committing();
        return result;
      });
    // A savepoint inside a transaction is bounded by the outer transaction's deadline.
    const done = pool
      ? pool.deadline.transaction((guard) => pool.hold(run(guard)), isConnectionLoss)
      : run();
    // Unlike SQLite, PostgreSQL makes a commit visible and durable in the same step.
    if (!options?.onCommit) return done;
    return done.then((result) => {
      options.onCommit?.();
      return result;
    });
  }

  accountInsert = this.op(accounts.accountInsert);
  accountGet = this.op(accounts.accountGet);
  accountUpdateSigningKeys = this.op(accounts.accountUpdateSigningKeys);
  accountList = this.op(management.accountList);
  accountUpdate = this.op(management.accountUpdate);
  accountDelete = this.op(management.accountDelete);

  userInsert = this.op(management.userInsert);
  userGetByEmail = this.op(management.userGetByEmail);

  usageAddMany = this.op(management.usageAddMany);
  usageSumByStep = this.op(management.usageSumByStep);

  searchIndexInsert = this.op(management.searchIndexInsert);
  searchIndexGet = this.op(management.searchIndexGet);
  searchIndexList = this.op(management.searchIndexList);
  searchIndexDelete = this.op(management.searchIndexDelete);
  searchIndexUpdate = this.op(management.searchIndexUpdate);

  async messageInsertMany(p: MessageInsertManyParams): Promise<void> {
    const shared = bodiesToStore(p.messages.map((m) => m.body));
    if (!p.messages.some(isGated) && shared.length === 0) {
      await this.track(
        this.writeInChunks(p.messages, (m) => m.body.byteLength, messages.insertMessages),
      );
      return;
    }
    // Shared bodies and gate rows first (created or updated in the same transaction).
    await this.track(
      // Inside a caller's transaction (the publisher's), as part of it: see transactional().
      transactional(this.db, async (tx) => {
        const stored = storeBodies(tx, shared);
        if (!p.messages.some(isGated)) {
          await stored;
          for (const chunk of chunkByBytes(p.messages, (m) => inlineBytes(m.body))) {
            await messages.insertMessages(tx, chunk);
          }
          return;
        }
        const { gated, gateWrites } = await flowGates.enterGates(tx, p.messages);
        const plain = p.messages.filter((m) => !isGated(m));
        const inserts = async (): Promise<void> => {
          await stored;
          for (const chunk of chunkByBytes(plain, (m) => inlineBytes(m.body))) {
            await messages.insertMessages(tx, chunk);
          }
          for (const chunk of chunkByBytes(gated, (g) => inlineBytes(g.message.body))) {
            await messages.insertGatedMessages(tx, chunk);
          }
        };
        // The gates' write is already on its way; the inserts follow it on the connection.
        await Promise.all([gateWrites, inserts()]);
      }),
    );
  }
  async messagePublishMany(p: MessagePublishManyParams): Promise<string[]> {
    const bodies = [...p.messages.map((m) => m.body), ...p.events.map((e) => e.body)];
    const plain =
      p.messages.length > 0 &&
      p.events.length > 0 &&
      !p.messages.some(isGated) &&
      bodiesToStore(bodies).length === 0 &&
      fitsOneStatement(bodies.reduce((sum, body) => sum + inlineBytes(body), 0));
    const leased = p.messages.some(isLeased);
    if (plain && leased && p.leaseLimits) {
      const waitMs = this.pool?.publishLockWaitMs ?? DEFAULT_PUBLISH_LOCK_WAIT_MS;
      return this.track(
        messages.publishLeased(this.db, p.messages, p.events, p.leaseLimits, waitMs),
      );
    }
    // Leases are kept only where they can be counted (above): here the messages are stored due.
    const unleased = leased ? p.messages.map(storedUnleased) : p.messages;
    if (plain) {
      await this.track(
        insertTogether(
          this.db,
          [messages.insertMessages, unleased],
          [events.insertEvents, p.events],
        ),
      );
      return [];
    }
    await this.transaction(async (tx) => {
      await tx.messageInsertMany({ messages: unleased });
      await tx.eventInsertMany({ events: p.events });
    });
    return [];
  }
  messageGet = this.op(messages.messageGet);
  messageView = this.op(messages.messageView);
  messageClaimDue = this.op(messages.messageClaimDue);
  messageClaimDueLimited(p: MessageClaimDueLimitedParams): Promise<MessageClaimDueLimitedResult> {
    // On the pool the statement is its own transaction, which need not wait for its WAL flush.
    const db = this.pool?.fixed ?? this.db;
    return this.track(messages.messageClaimDueLimited(db, p, this.pool !== undefined));
  }
  messageLeaseExtendMany = this.op(messages.messageLeaseExtendMany);
  messageDeleteLeasedMany = this.op(messages.messageDeleteLeasedMany);
  async messageFinishMany(p: MessageFinishManyParams): Promise<string[]> {
    const written = [...p.events, ...p.finished.flatMap((f) => f.events)];
    const oneStatement =
      bodiesToStore(written.map((e) => e.body)).length === 0 &&
      fitsOneStatement(
        written.reduce(
          (sum, e) => sum + inlineBytes(e.body) + (e.responseBody?.byteLength ?? 0),
          0,
        ),
      );
    let rest = p;
    let deleted: string[] = [];
    if (oneStatement) {
      // On the pool the statement is its own transaction; in a caller's, part of it.
      deleted = await this.track(
        messages.messageFinishUngated(
          this.pool?.fixed ?? this.db,
          p,
          written,
          this.pool !== undefined,
        ),
      );
      if (deleted.length === p.finished.length) return deleted;
      // The rest were lost (nothing to write) or are gated (a commit of their own, see the
      // contract): as below, without the events written above.
      const done = new Set(deleted);
      rest = { events: [], finished: p.finished.filter((f) => !done.has(f.lease.id)) };
    }
    const more = await this.transaction(async (tx) => {
      if (rest.events.length > 0) await tx.eventInsertMany({ events: rest.events });
      const ids = new Set(
        await tx.messageDeleteLeasedMany({ leases: rest.finished.map((f) => f.lease) }),
      );
      const logged = rest.finished.flatMap((f) =>
        ids.has(f.lease.id) ? f.events : (f.unheld ?? []),
      );
      if (logged.length > 0) await tx.eventInsertMany({ events: logged });
      return ids;
    }, NOT_DURABLE);
    for (const id of deleted) more.add(id);
    return p.finished.map((f) => f.lease.id).filter((id) => more.has(id));
  }
  messageRetryManyLeased = this.op(messages.messageRetryManyLeased);
  messageReleaseMany = this.op(messages.messageReleaseMany);
  messageSpreadDue = this.op(messages.messageSpreadDue);
  messageDeleteMany = this.op(messages.messageDeleteMany);
  messageCountInFlight = this.op(messages.messageCountInFlight);
  messageList = this.op(messages.messageList);
  messageCountByState = this.op(stats.messageCountByState);
  bodyDeleteUnreferenced = this.op(bodies.bodyDeleteUnreferenced);
  bodyUsage(): Promise<BodyUsage> {
    return this.track(bodies.bodyUsage(this.db), true);
  }
  dlqCountAll(): Promise<number> {
    return this.track(stats.dlqCountAll(this.db), true);
  }
  workflowDlqCount(p: { accountId?: string; limit: number }): Promise<number> {
    return this.track(stats.workflowDlqCount(this.db, p), true);
  }

  flowGateAdmit = this.op(flowGates.flowGateAdmit);
  flowGateGet = this.op(flowGates.flowGateGet);
  flowGateList = this.op(flowGates.flowGateList);
  flowGateUpdate = this.op(flowGates.flowGateUpdate);
  flowGateDelete = this.op(flowGates.flowGateDelete);
  queueUpsert = this.op(flowGates.queueUpsert);

  async eventInsertMany(p: EventInsertManyParams): Promise<void> {
    const bytes = (e: EventRecord): number =>
      inlineBytes(e.body) + (e.responseBody?.byteLength ?? 0);
    const shared = bodiesToStore(p.events.map((e) => e.body));
    await this.track(this.writeWithBodies(shared, p.events, bytes, events.insertEvents));
  }
  eventList = this.op(events.eventList);
  eventDeleteBefore = this.op(events.eventDeleteBefore);

  async dlqInsertMany(p: DlqInsertManyParams): Promise<void> {
    const bytes = (d: DlqEntry): number =>
      inlineBytes(d.message.body) + (d.responseBody?.byteLength ?? 0);
    const shared = bodiesToStore(p.entries.map((d) => d.message.body));
    await this.track(this.writeWithBodies(shared, p.entries, bytes, dlq.insertDlqEntries));
  }
  dlqGet = this.op(dlq.dlqGet);
  dlqList = this.op(dlq.dlqList);
  dlqDeleteMany = this.op(dlq.dlqDeleteMany);
  dlqCount = this.op(management.dlqCount);
  dlqDeleteExpired = this.op(dlq.dlqDeleteExpired);
  dlqEvictOldest = this.op(dlq.dlqEvictOldest);

  rateCounterIncrement = this.op(rateCounters.rateCounterIncrement);

  urlGroupLock = this.op(urlGroups.urlGroupLock);
  urlGroupGet = this.op(urlGroups.urlGroupGet);
  urlGroupList = this.op(urlGroups.urlGroupList);
  urlGroupCount = this.op(urlGroups.urlGroupCount);
  urlGroupPut = this.op(urlGroups.urlGroupPut);
  urlGroupDelete = this.op(urlGroups.urlGroupDelete);

  dedupClaim = this.op(dedup.dedupClaim);
  dedupDeleteExpired = this.op(dedup.dedupDeleteExpired);

  /** Count and write need one transaction (see postgres-schedules.ts): a savepoint inside a Tx. */
  scheduleUpsert(p: ScheduleUpsertParams): Promise<ScheduleUpsertResult> {
    return this.track(this.begin((tx) => schedules.scheduleUpsert(tx, p)));
  }
  scheduleGet = this.op(schedules.scheduleGet);
  scheduleList = this.op(schedules.scheduleList);
  scheduleDelete = this.op(schedules.scheduleDelete);
  scheduleSetPaused = this.op(schedules.scheduleSetPaused);
  scheduleClaimDue = this.op(schedules.scheduleClaimDue);
  scheduleAdvanceMany = this.op(schedules.scheduleAdvanceMany);
  scheduleNextDueAt(): Promise<number | undefined> {
    return this.track(schedules.scheduleNextDueAt(this.db), true);
  }

  workflowRunInsert = this.op(workflows.workflowRunInsert);
  workflowRunGet = this.op(workflows.workflowRunGet);
  workflowRunUpdate = this.op(workflows.workflowRunUpdate);
  workflowRunList = this.op(workflows.workflowRunList);
  /** Lock and insert need one transaction (see postgres-workflows.ts): a savepoint inside a Tx. */
  workflowStepAppend(p: WorkflowStepAppendParams): Promise<number> {
    return this.track(this.begin((tx) => workflows.workflowStepAppend(tx, p)));
  }
  workflowStepList = this.op(workflows.workflowStepList);
  workflowRunDeleteEnded = this.op(workflows.workflowRunDeleteEnded);
  workflowWaiterInsert = this.op(workflows.workflowWaiterInsert);
  workflowWaiterList = this.op(workflows.workflowWaiterList);
  workflowWaiterDelete = this.op(workflows.workflowWaiterDelete);

  /** An operation of a per-table module, run on this executor's connection. */
  private op<P, R>(operation: (db: Db, params: P) => Promise<R>): (params: P) => Promise<R> {
    // `this.db` is read at call time, so the order in which fields and constructor parameter
    // properties are initialized does not matter.
    const read = READ_VERB.test(operation.name);
    return (params) => this.track(operation(this.db, params), read);
  }

  /** Like `writeInChunks`, with the rows' shared bodies stored first in the same transaction. */
  private async writeWithBodies<T>(
    shared: readonly BodyToStore[],
    items: readonly T[],
    bytes: (item: T) => number,
    write: (db: Db, chunk: readonly T[]) => Promise<void>,
  ): Promise<void> {
    if (shared.length === 0) return this.writeInChunks(items, bytes, write);
    await transactional(this.db, async (tx) => {
      await storeBodies(tx, shared);
      for (const chunk of chunkByBytes(items, bytes)) await write(tx, chunk);
    });
  }

  /**
   * One statement per batch normally; a batch with more body bytes than one statement should
   * carry is split, and then the statements run in one transaction so the batch stays atomic.
   */
  private async writeInChunks<T>(
    items: readonly T[],
    bytes: (item: T) => number,
    write: (db: Db, chunk: readonly T[]) => Promise<void>,
  ): Promise<void> {
    const chunks = chunkByBytes(items, bytes);
    if (chunks.length <= 1) return write(this.db, chunks[0] ?? []);
    await this.begin(async (tx) => {
      for (const chunk of chunks) await write(tx, chunk);
    });
  }
}

function savepointOf(tx: postgres.TransactionSql): Begin {
  return async (fn) => (await tx.savepoint(async (sp) => ({ value: await fn(sp) }))).value;
}

/**
 * Connections `openConnections` opens at a server's start: the first second of a burst otherwise
 * waits for each of them (connect, authenticate, the package's type query). A few, not the pools'
 * whole size, so that a fleet of quiet nodes holds few of the server's `max_connections`.
 */
export const WARM_CONNECTIONS = 3;
export const WARM_FIXED_CONNECTIONS = 2;

/** How long close() waits for pending operations, then for connections to end. */
const CLOSE_TIMEOUT_SEC = 5;

/**
 * Connections of the pool that runs the engine's claim and its outcome statement (see `fixed` of
 * PostgresExecutor): one claim runs at a time per engine, and up to four outcome batches.
 */
const FIXED_POOL_MAX = 4;

/**
 * The settings of the `fixed` pool's sessions. Its plans are generic and made once per
 * connection, at a statement's first execution, which is often while the tables are still small
 * (a fresh store, the start of a burst): there a scan looks cheaper than an index, and the plan
 * kept it for the connection's life. The outcome statement of the end-to-end benchmark read the
 * whole messages table (with its dead rows) for every batch, 55 % of PostgreSQL's active time
 * (docs/benchmarks-log.md), and the claim joined its picked candidates to every due message (by a
 * hash join over the due index) instead of looking each up. These statements are written to
 * touch a batch of rows by index or ctid: with sequential and bitmap scans off, and hash and
 * merge joins off (joins are per-row lookups), the planner keeps to that whatever the table held
 * when it planned.
 */
export const FIXED_POOL_SETTINGS = {
  plan_cache_mode: 'force_generic_plan',
  enable_seqscan: 'off',
  enable_bitmapscan: 'off',
  enable_hashjoin: 'off',
  enable_mergejoin: 'off',
} as const;

/** The driver's operations in flight on the pool (a transaction counts as one). */
class PendingOperations {
  private readonly pending = new Set<Promise<unknown>>();

  track<T>(operation: Promise<T>): Promise<T> {
    this.pending.add(operation);
    const forget = (): void => void this.pending.delete(operation);
    operation.then(forget, forget);
    return operation;
  }

  /** Resolves once every tracked operation has settled, or after `timeoutMs`. */
  async settled(timeoutMs: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)));
    const drained = (async () => {
      while (this.pending.size > 0) await Promise.allSettled([...this.pending]);
    })();
    await Promise.race([drained, timeout]);
    clearTimeout(timer);
  }
}

/** Opens a pool; nothing connects until the first query (`migrate()` is usually the first). */
export function openPostgresDriver(options: PostgresDriverOptions): Driver {
  const schema = options.schema ?? 'public';
  const open = (max: number, connection: Record<string, string>): postgres.Sql =>
    postgres(options.url, {
      max,
      // A connection attempt to a server that is down or restarting fails after 5 s (the package
      // waits 30 s), so a request during an outage gets its 503 within a few seconds.
      connect_timeout: 5,
      connection: { search_path: quoteIdentifier(schema), ...connection },
      // CREATE … IF NOT EXISTS and similar emit NOTICEs; the package would print each one.
      onnotice: () => {},
      // Optional fields are written as NULL; the mappers turn NULL back into absent properties.
      transform: { undefined: null },
      ...(options.trace
        ? {
            debug: (_connection: number, text: string, params: unknown[]) =>
              options.trace?.(text, params),
          }
        : {}),
    });
  const sql = open(options.max ?? 10, {});
  const fixed = open(FIXED_POOL_MAX, FIXED_POOL_SETTINGS);
  const begin: Begin = async (fn) =>
    (await sql.begin(async (tx) => ({ value: await fn(tx) }))).value;
  const wakeChannel = wakeChannelOf(schema);
  const pending = new PendingOperations();
  const hold: Track = (operation) => pending.track(operation);
  const deadline = new Deadline(options.timeoutMs ?? DEFAULT_POSTGRES_TIMEOUT_MS);
  // Every operation on the pool is bounded; a transaction by its own rule (storage-timeout.ts).
  const track: Track = (operation, read = false) =>
    deadline.operation(pending.track(operation), read);
  let closing: Promise<void> | undefined;

  return {
    name: 'postgres',
    executor: new PostgresExecutor(sql, begin, track, {
      deadline,
      hold,
      fixed,
      publishLockWaitMs: Math.max(
        1,
        Math.round(options.publishLockWaitMs ?? DEFAULT_PUBLISH_LOCK_WAIT_MS),
      ),
    }),
    // A migration may legitimately run for long (an index on a large table): not bounded.
    migrate: () => hold(migratePostgres(sql, schema)),
    migrationStatus: () => track(postgresMigrationStatus(sql), true),
    async listenWake(onWake) {
      const subscription = await sql.listen(wakeChannel, (payload) => {
        const dueAt = payload === '' ? undefined : Number(payload);
        onWake(dueAt !== undefined && Number.isFinite(dueAt) ? dueAt : undefined);
      });
      let done = false;
      return async () => {
        if (done || closing) return;
        done = true;
        await subscription.unlisten();
      };
    },
    async openConnections() {
      // Concurrent statements make the package open a connection for each (up to its max).
      const open = (pool: postgres.Sql, n: number) =>
        Array.from({ length: n }, () => track(pool`SELECT 1`.execute(), true));
      await Promise.all([...open(sql, WARM_CONNECTIONS), ...open(fixed, WARM_FIXED_CONNECTIONS)]);
    },
    async notifyWake(dueAt) {
      await track(sql.notify(wakeChannel, dueAt === undefined ? '' : String(Math.trunc(dueAt))));
    },
    close() {
      // An operation called just before close() has not reached the pool yet (the package sends
      // a query a few microtasks after the call), and `sql.end()` would reject it: wait for the
      // pending ones first, for at most CLOSE_TIMEOUT_SEC, then end the connections.
      closing ??= pending
        .settled(CLOSE_TIMEOUT_SEC * 1000)
        .then(() =>
          Promise.all([
            sql.end({ timeout: CLOSE_TIMEOUT_SEC }),
            fixed.end({ timeout: CLOSE_TIMEOUT_SEC }),
          ]),
        )
        .then(() => undefined);
      return closing;
    },
  };
}
