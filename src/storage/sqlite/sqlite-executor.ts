/**
 * The async `Executor` contract over the synchronous `SqliteOps`.
 *
 * better-sqlite3 is synchronous, but the contract is async because PostgreSQL is. One connection
 * serves the whole process, so an open transaction must keep everyone else out while its async
 * callback awaits:
 * - the root executor runs an operation at once when no transaction is open (one flag check, no
 *   lock, no extra await: the publish and delivery hot paths call this thousands of times per
 *   second); otherwise the operation queues on the lock until the transaction ends;
 * - `transaction(fn)` takes the lock, runs `BEGIN IMMEDIATE`, awaits `fn(tx)`, then `COMMIT`, or
 *   `ROLLBACK` when `fn` throws;
 * - the `tx` executor runs its operations directly: it is the lock holder.
 *
 * Unlike PostgreSQL, where a transaction holds its own connection from a pool, here every
 * transaction of the process is serialized. Keep `fn` short and free of network I/O. Calling the
 * root executor from inside `fn` (instead of `tx`) waits for the transaction itself: a deadlock,
 * which the contract rules out ("`fn` must use only the `tx` it is given").
 */
import type Database from 'better-sqlite3';
import type { WalSync } from './wal-sync.js';
import type { WalCheckpointer } from './wal-checkpointer.js';
import { StorageNoAnswerError } from '../storage-deadline.js';
import type {
  Account,
  ClaimedMessage,
  DlqEntry,
  EventRecord,
  Message,
  UrlGroup,
} from '../../core/types.js';
import type { ManagementUser, SearchIndex, UsageBucket } from '../../core/management.js';
import type {
  AccountDeleteParams,
  AccountGetParams,
  BodyDeleteUnreferencedParams,
  BodyUsage,
  AccountListParams,
  AccountUpdateParams,
  DlqCountParams,
  SearchIndexDeleteParams,
  SearchIndexGetParams,
  SearchIndexInsertParams,
  SearchIndexListParams,
  SearchIndexUpdateParams,
  UsageAddManyParams,
  UsageSumByStepParams,
  UserGetByEmailParams,
  UserInsertParams,
  AccountInsertParams,
  AccountUpdateSigningKeysParams,
  DedupClaimParams,
  DedupClaimResult,
  DedupDeleteExpiredParams,
  DlqDeleteExpiredParams,
  DlqEvictOldestParams,
  DlqDeleteManyParams,
  RateCounterIncrementParams,
  RateCounterIncrementResult,
  DlqGetParams,
  DlqInsertManyParams,
  DlqListParams,
  EventDeleteBeforeParams,
  EventInsertManyParams,
  EventListParams,
  Executor,
  TransactionOptions,
  MessageClaimDueLimitedParams,
  MessageClaimDueLimitedResult,
  MessageClaimDueParams,
  MessageCountInFlightParams,
  FlowGateAdmitParams,
  FlowGateAdmitResult,
  FlowGateKeyParams,
  FlowGateListParams,
  FlowGateUpdateParams,
  QueueUpsertParams,
  QueueUpsertResult,
  MessageDeleteLeasedManyParams,
  MessageFinishManyParams,
  MessageDeleteManyParams,
  MessageGetParams,
  MessageViewParams,
  MessageState,
  MessageListParams,
  ListedMessage,
  MessageInsertManyParams,
  MessagePublishManyParams,
  MessageLeaseExtendManyParams,
  MessageReleaseManyParams,
  MessageSpreadDueParams,
  MessageRetryManyParams,
  Page,
  UrlGroupCountParams,
  UrlGroupDeleteParams,
  UrlGroupGetParams,
  UrlGroupListParams,
  UrlGroupPutParams,
  ScheduleAdvanceManyParams,
  ScheduleClaimDueParams,
  ScheduleDeleteParams,
  ScheduleGetParams,
  ScheduleListParams,
  ScheduleSetPausedParams,
  ScheduleUpsertParams,
  ScheduleUpsertResult,
  WorkflowRunGetParams,
  WorkflowRunDeleteEndedParams,
  WorkflowRunInsertParams,
  WorkflowRunListParams,
  WorkflowRunUpdateParams,
  WorkflowStepAppendParams,
  WorkflowStepListParams,
  WorkflowWaiterDeleteParams,
  WorkflowWaiterInsertParams,
  WorkflowWaiterListParams,
  MessageCountByStateParams,
  MessageCounts,
} from '../driver.js';
import type { Schedule } from '../../core/schedule.js';
import type { WorkflowRun, WorkflowStep } from '../../core/workflow.js';
import type { WorkflowWaiter } from '../../core/workflow-events.js';
import type { FlowGate } from '../../core/flow-control.js';
import type { AsyncLock } from './async-lock.js';
import type { SqliteOps } from './sqlite-ops.js';

/** How an executor runs its operations: at the root (with the lock) or inside a transaction. */
interface Scope {
  /** `readOnly`: the op never writes, so it needs no durability wait (nor the check for one). */
  run<T>(op: () => T, readOnly?: boolean): Promise<T>;
  transaction<T>(fn: (tx: Executor) => Promise<T>, options?: TransactionOptions): Promise<T>;
}

export class SqliteExecutor implements Executor {
  constructor(
    private readonly ops: SqliteOps,
    private readonly scope: Scope,
  ) {}

  transaction<T>(fn: (tx: Executor) => Promise<T>, options?: TransactionOptions): Promise<T> {
    return this.scope.transaction(fn, options);
  }

  accountInsert(p: AccountInsertParams): Promise<void> {
    return this.scope.run(() => this.ops.accountInsert(p));
  }
  accountGet(p: AccountGetParams): Promise<Account | undefined> {
    return this.scope.run(() => this.ops.accountGet(p), READ_ONLY);
  }
  accountUpdateSigningKeys(p: AccountUpdateSigningKeysParams): Promise<void> {
    return this.scope.run(() => this.ops.accountUpdateSigningKeys(p));
  }

  accountList(p: AccountListParams): Promise<Account[]> {
    return this.scope.run(() => this.ops.management.accountList(p), READ_ONLY);
  }
  accountUpdate(p: AccountUpdateParams): Promise<boolean> {
    return this.scope.run(() => this.ops.management.accountUpdate(p));
  }
  accountDelete(p: AccountDeleteParams): Promise<boolean> {
    return this.scope.run(() => this.ops.management.accountDelete(p));
  }

  userInsert(p: UserInsertParams): Promise<void> {
    return this.scope.run(() => this.ops.management.userInsert(p));
  }
  userGetByEmail(p: UserGetByEmailParams): Promise<ManagementUser | undefined> {
    return this.scope.run(() => this.ops.management.userGetByEmail(p), READ_ONLY);
  }

  usageAddMany(p: UsageAddManyParams): Promise<void> {
    return this.scope.run(() => this.ops.management.usageAddMany(p));
  }
  usageSumByStep(p: UsageSumByStepParams): Promise<UsageBucket[]> {
    return this.scope.run(() => this.ops.management.usageSumByStep(p), READ_ONLY);
  }

  searchIndexInsert(p: SearchIndexInsertParams): Promise<void> {
    return this.scope.run(() => this.ops.management.searchIndexInsert(p));
  }
  searchIndexGet(p: SearchIndexGetParams): Promise<SearchIndex | undefined> {
    return this.scope.run(() => this.ops.management.searchIndexGet(p), READ_ONLY);
  }
  searchIndexList(p: SearchIndexListParams): Promise<SearchIndex[]> {
    return this.scope.run(() => this.ops.management.searchIndexList(p), READ_ONLY);
  }
  searchIndexDelete(p: SearchIndexDeleteParams): Promise<boolean> {
    return this.scope.run(() => this.ops.management.searchIndexDelete(p));
  }
  searchIndexUpdate(p: SearchIndexUpdateParams): Promise<boolean> {
    return this.scope.run(() => this.ops.management.searchIndexUpdate(p));
  }

  messageInsertMany(p: MessageInsertManyParams): Promise<void> {
    return this.scope.run(() => this.ops.messageInsertMany(p));
  }
  messagePublishMany(p: MessagePublishManyParams): Promise<string[]> {
    return this.scope.run(() => this.ops.messagePublishMany(p));
  }
  messageGet(p: MessageGetParams): Promise<Message | undefined> {
    return this.scope.run(() => this.ops.messageGet(p), READ_ONLY);
  }
  messageView(
    p: MessageViewParams,
  ): Promise<(ListedMessage & { state: MessageState }) | undefined> {
    return this.scope.run(() => this.ops.messageView(p), READ_ONLY);
  }
  messageClaimDue(p: MessageClaimDueParams): Promise<ClaimedMessage[]> {
    return this.scope.run(() => this.ops.messageClaimDue(p));
  }
  /**
   * Unlike PostgreSQL, the claim leaves the account limit to the engine: one process owns the
   * database, so the engine's in-memory count per account (engine/account-slots.ts) is already
   * exact. The origin rooms apply here (messageClaimDueRooms).
   */
  messageClaimDueLimited(p: MessageClaimDueLimitedParams): Promise<MessageClaimDueLimitedResult> {
    // A claim writes no row (its leases are in memory): nothing to wait for.
    return this.scope.run(
      () => ({
        messages: this.ops.messageClaimDueRooms(p),
        atLimit: [],
        gatesReady: this.ops.flowGates.mayBeReady(p.now),
        nextDueAt: this.ops.nextDueAfter(p.now),
      }),
      READ_ONLY,
    );
  }
  messageLeaseExtendMany(p: MessageLeaseExtendManyParams): Promise<string[]> {
    return this.scope.run(() => this.ops.messageLeaseExtendMany(p));
  }
  messageDeleteLeasedMany(p: MessageDeleteLeasedManyParams): Promise<string[]> {
    return this.scope.run(() => this.ops.messageDeleteLeasedMany(p));
  }
  messageFinishMany(p: MessageFinishManyParams): Promise<string[]> {
    return this.scope.run(() => this.ops.messageFinishMany(p));
  }
  messageRetryManyLeased(p: MessageRetryManyParams): Promise<string[]> {
    return this.scope.run(() => this.ops.messageRetryManyLeased(p));
  }
  messageReleaseMany(p: MessageReleaseManyParams): Promise<string[]> {
    return this.scope.run(() => this.ops.messageReleaseMany(p));
  }
  messageSpreadDue(p: MessageSpreadDueParams): Promise<number | undefined> {
    return this.scope.run(() => this.ops.messageSpreadDue(p));
  }
  messageDeleteMany(p: MessageDeleteManyParams): Promise<Message[]> {
    return this.scope.run(() => this.ops.messageDeleteMany(p));
  }
  messageList(p: MessageListParams): Promise<Page<ListedMessage>> {
    return this.scope.run(() => this.ops.messageList(p), READ_ONLY);
  }
  messageCountInFlight(p: MessageCountInFlightParams): Promise<number> {
    return this.scope.run(() => this.ops.messageCountInFlight(p), READ_ONLY);
  }

  flowGateAdmit(p: FlowGateAdmitParams): Promise<FlowGateAdmitResult> {
    return this.scope.run(() => this.ops.flowGates.flowGateAdmit(p));
  }
  flowGateGet(p: FlowGateKeyParams): Promise<FlowGate | undefined> {
    return this.scope.run(() => this.ops.flowGates.flowGateGet(p), READ_ONLY);
  }
  flowGateList(p: FlowGateListParams): Promise<FlowGate[]> {
    return this.scope.run(() => this.ops.flowGates.flowGateList(p), READ_ONLY);
  }
  flowGateUpdate(p: FlowGateUpdateParams): Promise<FlowGate | undefined> {
    return this.scope.run(() => this.ops.flowGates.flowGateUpdate(p));
  }
  flowGateDelete(p: FlowGateKeyParams): Promise<boolean> {
    return this.scope.run(() => this.ops.flowGates.flowGateDelete(p));
  }
  queueUpsert(p: QueueUpsertParams): Promise<QueueUpsertResult> {
    return this.scope.run(() => this.ops.flowGates.queueUpsert(p));
  }

  eventInsertMany(p: EventInsertManyParams): Promise<void> {
    return this.scope.run(() => this.ops.eventInsertMany(p));
  }
  eventList(p: EventListParams): Promise<Page<EventRecord>> {
    return this.scope.run(() => this.ops.eventList(p), READ_ONLY);
  }
  eventDeleteBefore(p: EventDeleteBeforeParams): Promise<number> {
    return this.scope.run(() => this.ops.eventDeleteBefore(p));
  }

  dlqInsertMany(p: DlqInsertManyParams): Promise<void> {
    return this.scope.run(() => this.ops.dlqInsertMany(p));
  }
  dlqGet(p: DlqGetParams): Promise<DlqEntry | undefined> {
    return this.scope.run(() => this.ops.dlqGet(p), READ_ONLY);
  }
  dlqList(p: DlqListParams): Promise<Page<DlqEntry>> {
    return this.scope.run(() => this.ops.dlqList(p), READ_ONLY);
  }
  dlqDeleteMany(p: DlqDeleteManyParams): Promise<number> {
    return this.scope.run(() => this.ops.dlqDeleteMany(p));
  }
  dlqCount(p: DlqCountParams): Promise<number> {
    return this.scope.run(() => this.ops.management.dlqCount(p), READ_ONLY);
  }
  bodyDeleteUnreferenced(p: BodyDeleteUnreferencedParams): Promise<number> {
    return this.scope.run(() => this.ops.bodies.deleteUnreferenced(p.limit));
  }
  bodyUsage(): Promise<BodyUsage> {
    return this.scope.run(() => this.ops.bodies.usage(), READ_ONLY);
  }
  dlqCountAll(): Promise<number> {
    return this.scope.run(() => this.ops.stats.dlqCountAll(), READ_ONLY);
  }
  workflowDlqCount(p: { accountId?: string; limit: number }): Promise<number> {
    return this.scope.run(() => this.ops.stats.workflowDlqCount(p.accountId, p.limit), READ_ONLY);
  }
  messageCountByState(p: MessageCountByStateParams): Promise<MessageCounts> {
    return this.scope.run(() => this.ops.stats.messageCountByState(p), READ_ONLY);
  }
  dlqDeleteExpired(p: DlqDeleteExpiredParams): Promise<number> {
    return this.scope.run(() => this.ops.dlqDeleteExpired(p));
  }
  dlqEvictOldest(p: DlqEvictOldestParams): Promise<DlqEntry[]> {
    return this.scope.run(() => this.ops.limits.dlqEvictOldest(p));
  }

  /** In memory (see SqliteLimitOps): no statement, so no lock to wait for, even mid-transaction. */
  rateCounterIncrement(p: RateCounterIncrementParams): Promise<RateCounterIncrementResult> {
    return Promise.resolve(this.ops.limits.rateCounterIncrement(p));
  }

  /** Nothing to wait for: the transaction already excludes every other writer. */
  urlGroupLock(): Promise<void> {
    return Promise.resolve();
  }
  urlGroupGet(p: UrlGroupGetParams): Promise<UrlGroup | undefined> {
    return this.scope.run(() => this.ops.urlGroupGet(p), READ_ONLY);
  }
  urlGroupList(p: UrlGroupListParams): Promise<UrlGroup[]> {
    return this.scope.run(() => this.ops.urlGroupList(p), READ_ONLY);
  }
  urlGroupCount(p: UrlGroupCountParams): Promise<number> {
    return this.scope.run(() => this.ops.urlGroupCount(p), READ_ONLY);
  }
  urlGroupPut(p: UrlGroupPutParams): Promise<void> {
    return this.scope.run(() => this.ops.urlGroupPut(p));
  }
  urlGroupDelete(p: UrlGroupDeleteParams): Promise<boolean> {
    return this.scope.run(() => this.ops.urlGroupDelete(p));
  }

  dedupClaim(p: DedupClaimParams): Promise<DedupClaimResult> {
    return this.scope.run(() => this.ops.dedupClaim(p));
  }
  dedupDeleteExpired(p: DedupDeleteExpiredParams): Promise<number> {
    return this.scope.run(() => this.ops.dedupDeleteExpired(p));
  }

  scheduleUpsert(p: ScheduleUpsertParams): Promise<ScheduleUpsertResult> {
    return this.scope.run(() => this.ops.schedules.scheduleUpsert(p));
  }
  scheduleGet(p: ScheduleGetParams): Promise<Schedule | undefined> {
    return this.scope.run(() => this.ops.schedules.scheduleGet(p), READ_ONLY);
  }
  scheduleList(p: ScheduleListParams): Promise<Schedule[]> {
    return this.scope.run(() => this.ops.schedules.scheduleList(p), READ_ONLY);
  }
  scheduleDelete(p: ScheduleDeleteParams): Promise<boolean> {
    return this.scope.run(() => this.ops.schedules.scheduleDelete(p));
  }
  scheduleSetPaused(p: ScheduleSetPausedParams): Promise<boolean> {
    return this.scope.run(() => this.ops.schedules.scheduleSetPaused(p));
  }
  scheduleClaimDue(p: ScheduleClaimDueParams): Promise<Schedule[]> {
    return this.scope.run(() => this.ops.schedules.scheduleClaimDue(p), READ_ONLY);
  }
  scheduleAdvanceMany(p: ScheduleAdvanceManyParams): Promise<void> {
    return this.scope.run(() => this.ops.schedules.scheduleAdvanceMany(p));
  }
  scheduleNextDueAt(): Promise<number | undefined> {
    return this.scope.run(() => this.ops.schedules.scheduleNextDueAt(), READ_ONLY);
  }

  workflowRunInsert(p: WorkflowRunInsertParams): Promise<boolean> {
    return this.scope.run(() => this.ops.workflows.workflowRunInsert(p));
  }
  workflowRunGet(p: WorkflowRunGetParams): Promise<WorkflowRun | undefined> {
    return this.scope.run(() => this.ops.workflows.workflowRunGet(p), READ_ONLY);
  }
  workflowRunUpdate(p: WorkflowRunUpdateParams): Promise<boolean> {
    return this.scope.run(() => this.ops.workflows.workflowRunUpdate(p));
  }
  workflowRunList(p: WorkflowRunListParams): Promise<Page<WorkflowRun>> {
    return this.scope.run(() => this.ops.workflows.workflowRunList(p), READ_ONLY);
  }
  workflowRunDeleteEnded(p: WorkflowRunDeleteEndedParams): Promise<number> {
    return this.scope.run(() => this.ops.workflows.workflowRunDeleteEnded(p));
  }
  workflowStepAppend(p: WorkflowStepAppendParams): Promise<number> {
    return this.scope.run(() => this.ops.workflows.workflowStepAppend(p));
  }
  workflowStepList(p: WorkflowStepListParams): Promise<WorkflowStep[]> {
    return this.scope.run(() => this.ops.workflows.workflowStepList(p), READ_ONLY);
  }
  workflowWaiterInsert(p: WorkflowWaiterInsertParams): Promise<void> {
    return this.scope.run(() => this.ops.workflows.workflowWaiterInsert(p));
  }
  workflowWaiterList(p: WorkflowWaiterListParams): Promise<WorkflowWaiter[]> {
    return this.scope.run(() => this.ops.workflows.workflowWaiterList(p), READ_ONLY);
  }
  workflowWaiterDelete(p: WorkflowWaiterDeleteParams): Promise<boolean> {
    return this.scope.run(() => this.ops.workflows.workflowWaiterDelete(p));
  }
}

const READ_ONLY = true;

/** Runs a synchronous operation, turning a throw into a rejected promise. */
function settle<T>(op: () => T | Promise<T>): Promise<T> {
  try {
    return Promise.resolve(op());
  } catch (error) {
    return Promise.reject(error instanceof Error ? error : new Error(String(error)));
  }
}

/** SQLite's "no room": the disk is full or the file reached `max_page_count`. */
const isFull = (error: unknown): boolean =>
  (error as { code?: unknown } | undefined)?.code === 'SQLITE_FULL';

/**
 * The WAL's fsync failed after COMMIT: the transaction is in the WAL and visible (and would be
 * delivered), but was not confirmed durable. Its caller must not be told "nothing was stored".
 */
function syncFailed(error: unknown): StorageNoAnswerError {
  return new StorageNoAnswerError('unknown', 'could not sync a commit to disk', { cause: error });
}

/** The driver's own executor: operations outside any transaction. */
export class RootScope implements Scope {
  private closed = false;
  /** See {@link RootScope.full}. */
  private lastWriteFull = false;
  private readonly begin: Database.Statement;
  private readonly commit: Database.Statement;
  private readonly rollback: Database.Statement;

  private readonly totalChanges: Database.Statement;

  constructor(
    private readonly db: Database.Database,
    private readonly ops: SqliteOps,
    private readonly lock: AsyncLock,
    /** Makes commits durable before they are reported (see wal-sync.ts); absent = no wait. */
    private readonly walSync?: WalSync,
    /** Checkpoints the WAL off the main thread (see wal-checkpointer.ts); absent in memory. */
    private readonly checkpointer?: WalCheckpointer,
  ) {
    this.begin = db.prepare('BEGIN IMMEDIATE');
    this.commit = db.prepare('COMMIT');
    this.rollback = db.prepare('ROLLBACK');
    this.totalChanges = db.prepare('SELECT total_changes()').pluck();
  }

  run<T>(op: () => T, readOnly = false): Promise<T> {
    const task = readOnly || (!this.walSync && !this.checkpointer) ? op : () => this.write(op);
    if (this.lock.idle && !this.closed) return settle(task); // the hot path
    return this.lock.runExclusive(() => {
      this.assertOpen();
      return task();
    });
  }

  /**
   * A write outside a transaction commits by itself: it is reported only once durable, and the
   * checkpointer hears of it.
   */
  private write<T>(op: () => T): T | Promise<T> {
    const before = this.totalChanges.get() as number;
    let result: T;
    try {
      result = op();
    } catch (error) {
      if (isFull(error)) this.lastWriteFull = true;
      throw error;
    }
    if ((this.totalChanges.get() as number) === before) return result;
    this.lastWriteFull = false;
    this.checkpointer?.committed();
    if (!this.walSync) return result;
    return this.walSync.sync().then(
      () => result,
      (error: unknown) => {
        throw syncFailed(error);
      },
    );
  }

  async transaction<T>(fn: (tx: Executor) => Promise<T>, options?: TransactionOptions): Promise<T> {
    await this.lock.acquire();
    let released = false;
    const tx = new TxScope(this.db, this.ops);
    try {
      this.assertOpen();
      this.begin.run();
      this.ops.leases.begin();
      let result: T;
      try {
        result = await fn(tx.executor);
        this.ops.statements.assertSound(); // `fn` caught an operation's failure: roll back
        this.commit.run();
        this.lastWriteFull = false;
        this.checkpointer?.committed();
        this.ops.leases.commit();
        options?.onCommit?.();
      } catch (error) {
        // On SQLITE_FULL, SQLite may have rolled the whole transaction back already.
        if (isFull(error)) this.lastWriteFull = true;
        if (this.db.inTransaction) this.rollback.run();
        this.ops.statements.recover();
        this.ops.leases.rollback();
        this.ops.flowGates.forgetReady();
        throw error;
      }
      // Release the lock first, so the next transaction runs while this one's fsync is in flight.
      tx.end();
      this.lock.release();
      released = true;
      // A non-durable commit is already in the WAL (it survives a process crash); the next
      // durable commit's fsync covers it too.
      if (this.walSync && options?.durable !== false) {
        await this.walSync.sync().catch((error: unknown) => {
          throw syncFailed(error);
        });
      }
      return result;
    } finally {
      if (!released) {
        tx.end();
        this.lock.release();
      }
    }
  }

  /**
   * True while the last write failed with `SQLITE_FULL` and none has committed since: storage
   * has no room for what was asked of it (readiness reports it).
   */
  get full(): boolean {
    return this.lastWriteFull;
  }

  /**
   * Runs `fn` alone on the connection (migrations, a RESTART checkpoint); nothing else runs
   * meanwhile, until the promise it returns settles.
   */
  exclusive<T>(fn: () => T | Promise<T>): Promise<T> {
    return this.lock.runExclusive(() => {
      this.assertOpen();
      return fn();
    });
  }

  /** Waits for queued operations and open transactions, then closes the connection. */
  close(): Promise<void> {
    return this.lock.runExclusive(async () => {
      if (this.closed) return;
      this.closed = true;
      await this.walSync?.close(); // answers owed to writes that await their fsync come first
      // The checkpoint thread's connection closes first, so that this one is the last: SQLite
      // then checkpoints the whole WAL and removes it, leaving one self-contained file.
      await this.checkpointer?.close();
      this.db.close();
    });
  }

  private assertOpen(): void {
    if (this.closed) throw new Error('the SQLite driver is closed');
  }
}

/**
 * The executor given to a transaction's callback. Its operations run directly (the transaction
 * holds the lock). A nested `transaction(fn)` runs `fn` in a SAVEPOINT of the same transaction:
 * its writes commit with the outer transaction, and if `fn` throws they alone are rolled back,
 * so an outer callback that catches the error can go on. Nested transactions must be awaited one
 * at a time: savepoints form a stack, and overlapping ones are reported as an error.
 */
class TxScope implements Scope {
  readonly executor: SqliteExecutor;
  private active = true;
  private readonly savepoints: string[] = [];
  private nextSavepoint = 1;

  constructor(
    private readonly db: Database.Database,
    private readonly ops: SqliteOps,
  ) {
    this.executor = new SqliteExecutor(ops, this);
  }

  /** Called when the transaction commits or rolls back: later use of `tx` is an error. */
  end(): void {
    this.active = false;
  }

  run<T>(op: () => T): Promise<T> {
    if (!this.active) return Promise.reject(endedError());
    return settle(() => {
      this.ops.statements.assertSound();
      return op();
    });
  }

  async transaction<T>(fn: (tx: Executor) => Promise<T>): Promise<T> {
    if (!this.active) throw endedError();
    this.ops.statements.assertSound();
    const name = `ferry_tx_${this.nextSavepoint++}`;
    this.db.exec(`SAVEPOINT ${name}`);
    this.savepoints.push(name);
    const leaseMark = this.ops.leases.mark();
    let result: T;
    try {
      result = await fn(this.executor);
    } catch (error) {
      this.leave(name, true, error);
      this.ops.leases.rollbackTo(leaseMark);
      this.ops.flowGates.forgetReady();
      throw error;
    }
    this.leave(name, false);
    return result;
  }

  /** Ends savepoint `name`; `failure` is the callback's error when it threw. */
  private leave(name: string, rollback: boolean, failure?: unknown): void {
    const cause = failure === undefined ? undefined : { cause: failure };
    if (!this.active) throw endedError(cause);
    if (this.savepoints[this.savepoints.length - 1] !== name) {
      throw new Error(
        'nested transactions of one tx overlapped; await each before the next',
        cause,
      );
    }
    this.savepoints.pop();
    if (rollback) {
      this.db.exec(`ROLLBACK TO ${name}`);
      // A failure inside it is undone; none can be from before (nothing runs after one).
      this.ops.statements.recover();
    }
    this.db.exec(`RELEASE ${name}`);
  }
}

const endedError = (options?: ErrorOptions): Error =>
  new Error('this transaction has ended; use the executor it was started from', options);
