/**
 * The storage contract. Every driver (SQLite, PostgreSQL) implements it and passes the shared
 * conformance suite in `storage/conformance/`. Callers see only this contract: no SQL and no
 * connection leaves a driver's folder.
 *
 * Conventions (after River's riverdriver):
 * - operations are `entityVerb[Many](params)` with one params object each;
 * - time is an input: anything time-dependent takes `now` (Unix ms) from the caller's clock,
 *   and no driver reads the wall clock for it;
 * - `…Many` operations that take leases are fenced: they apply only to rows whose `lease_token`
 *   still matches, and return the ids they applied to, so a node that lost a lease cannot
 *   overwrite the new owner's work.
 */
import type {
  Account,
  ClaimedMessage,
  DlqEntry,
  EventRecord,
  EventState,
  Message,
  UrlGroup,
  PlanName,
} from '../core/types.js';
import type {
  ManagementUser,
  SearchIndex,
  UsageBucket,
  UsageCount,
  UsageMetric,
} from '../core/management.js';
import type { Schedule } from '../core/schedule.js';
import type {
  FailureFunctionState,
  WorkflowRun,
  WorkflowRunState,
  WorkflowStep,
} from '../core/workflow.js';
import type { WorkflowWaiter } from '../core/workflow-events.js';
import type { FlowGate, FlowGateKind } from '../core/flow-control.js';

/** Filters shared by bulk cancel, the events log and the DLQ. OR within a field, AND across. */
export interface RecordFilter {
  messageIds?: string[];
  dlqIds?: string[];
  states?: EventState[];
  urls?: string[];
  /** URL host including a non-default port (`example.com:8080`), as `new URL(u).host`. */
  hosts?: string[];
  /** URL path, as `new URL(u).pathname`. */
  paths?: string[];
  topicNames?: string[];
  queueNames?: string[];
  scheduleIds?: string[];
  /** Matches a record when any of its labels equals any of these. */
  labels?: string[];
  flowControlKeys?: string[];
  callerIps?: string[];
  responseStatuses?: number[];
  /**
   * Messages of these workflow runs (`spec.workflow.runId`): every message of a run, also those
   * its history does not name (a `context.call`, its callback, a wait's timeout). Only messages
   * have a run: no event or DLQ entry matches.
   */
  workflowRunIds?: string[];
  /** Inclusive lower bound, ms, on creation time (events: the event time). */
  fromDate?: number;
  /** Inclusive upper bound, ms. */
  toDate?: number;
}

export interface Page<T> {
  items: T[];
  /** Opaque; pass back to get the next page. Absent on the last page. */
  cursor?: string;
}

export interface Lease {
  id: string;
  leaseToken: string;
}

// ---- params -------------------------------------------------------------------------------

export interface AccountInsertParams {
  account: Account;
}
export interface AccountGetParams {
  id: string;
}
export interface AccountUpdateSigningKeysParams {
  id: string;
  currentSigningKey: string;
  nextSigningKey: string;
}

export interface AccountListParams {
  /** Only accounts of this management user. */
  ownerId: string;
}
/** Fields to change; absent ones keep their value. */
export interface AccountUpdateParams {
  id: string;
  plan?: PlanName;
  /** When the plan changed, ms; set together with `plan`. */
  planChangedAt?: number;
  budget?: number;
  /**
   * A new password: its hash and its sealed form, set together; or the sealed form alone, for
   * the password an account already has (the default account's, sealed after an upgrade).
   */
  passwordHash?: string;
  passwordSealed?: string;
  ownerId?: string;
}
export interface AccountDeleteParams {
  id: string;
}

export interface UserInsertParams {
  user: ManagementUser;
}
export interface UserGetByEmailParams {
  email: string;
}

export interface UsageAddManyParams {
  counts: UsageCount[];
}
export interface UsageSumByStepParams {
  subjectId: string;
  /** Inclusive start of the first step, ms. */
  from: number;
  /** Exclusive end, ms. */
  to: number;
  /** Width of a step, ms (a multiple of a minute). */
  stepMs: number;
  /** Only these metrics; all when absent. */
  metrics?: UsageMetric[];
}

export interface SearchIndexInsertParams {
  index: SearchIndex;
}
export interface SearchIndexGetParams {
  ownerId: string;
  id: string;
}
export interface SearchIndexListParams {
  ownerId: string;
}
export interface SearchIndexDeleteParams {
  ownerId: string;
  id: string;
}
/** Fields to change; absent ones keep their value. */
export interface SearchIndexUpdateParams {
  ownerId: string;
  id: string;
  name?: string;
  /** New tokens: their hashes and sealed forms, set together. */
  tokenHash?: string;
  readOnlyTokenHash?: string;
  tokenSealed?: string;
  readOnlyTokenSealed?: string;
}

export interface BodyDeleteUnreferencedParams {
  /** Most bodies deleted (one transaction); bodies can be 10 MiB each, so keep it small. */
  limit: number;
}

/** What the shared `bodies` table holds (migration 011): bodies and their total length. */
export interface BodyUsage {
  count: number;
  /** Sum of the bodies' lengths, bytes. */
  bytes: number;
}

export interface DlqCountParams {
  accountId: string;
}

export interface MessageInsertManyParams {
  messages: Message[];
}
/** Newly published messages and their CREATED events (`events[i]` need not be `messages[i]`'s). */
export interface MessagePublishManyParams {
  messages: Message[];
  events: EventRecord[];
  /**
   * For messages given leased (`ClaimedMessage`, see `messageInsertMany`): the limits to store
   * them leased within, `max_global_parallelism` by plan (0: none), counted at `now`. PostgreSQL
   * keeps such a message's lease only within its account's limit, counting every node's leases
   * under the claim's lock, and stores it unleased (due from its creation) over the limit or when
   * that lock is busy. SQLite keeps every lease (its engine counts deliveries). Without this, a
   * message given leased is stored unleased on PostgreSQL.
   */
  leaseLimits?: { now: number; maxInFlightByPlan: Record<string, number> };
}
export interface MessageGetParams {
  accountId: string;
  id: string;
}
export interface MessageViewParams extends MessageGetParams {
  /** The time the message's state is told at (see `MessageState`). */
  now: number;
}
export interface MessageClaimDueParams {
  now: number;
  limit: number;
  /** The claimed rows' new `dueAt`: if the claimer dies, they are due again at this time. */
  leaseUntil: number;
}
export interface MessageClaimDueLimitedParams extends MessageClaimDueParams {
  /**
   * Each plan's `max_global_parallelism`: after the claim, an account of that plan has at most
   * this many messages leased and unexpired (its deliveries in flight, on every node). A plan
   * that is absent or 0 has no limit.
   */
  maxInFlightByPlan: Readonly<Record<string, number>>;
  /**
   * Destination origins this claim may take only a few messages of (the engine's congested
   * origins, see engine/origin-limit.ts): at most `room` of each, earliest first; the rest stay
   * due, unclaimed, and the claim reads past them (up to ORIGIN_SKIP_SCAN rows) to other
   * origins' messages. Absent or empty: no origin is limited.
   */
  originRooms?: readonly OriginRoom[];
}
/** How many messages of one destination origin a claim may take. */
export interface OriginRoom {
  /** `scheme://host[:port]`, as `new URL(url).origin` (lower case, no default port). */
  origin: string;
  room: number;
}
/**
 * Due rows a claim with `originRooms` reads past its `limit` at most, to reach other origins'
 * messages behind a limited origin's backlog. A backlog deeper than this is moved out of the way
 * by the engine once its origin counts as stalled (engine/origin-limit.ts).
 */
export const ORIGIN_SKIP_SCAN = 20_000;
export interface MessageClaimDueLimitedResult {
  messages: ClaimedMessage[];
  /**
   * Accounts whose due messages were left unclaimed because the account had no free slot: the
   * caller claims again when one of their deliveries ends.
   */
  atLimit: string[];
  /**
   * A flow-control gate may be ready at `now`: admission (`flowGateAdmit`) has work, and what it
   * admits is claimed by the next claim. Never false while a gate is ready; SQLite may say true
   * when none is (it keeps a lower bound of the gates' ready times).
   */
  gatesReady: boolean;
  /**
   * When the engine should claim next, as the claim left the table: the earliest `dueAt` after
   * `now` (the engine's own leases at their expiry; parked messages of keys and queues excluded)
   * or a gate's ready time, whichever comes first; undefined when nothing waits.
   */
  nextDueAt: number | undefined;
}
export interface MessageLeaseExtendManyParams {
  leases: Lease[];
  leaseUntil: number;
}
export interface MessageDeleteLeasedManyParams {
  leases: Lease[];
}
export interface MessageFinishManyParams {
  /** Written first, whatever becomes of the leases (the ACTIVE events of claims). */
  events: EventRecord[];
  /**
   * Messages done for good: each is deleted if its lease holds, and only then its events
   * written; when it does not hold, its `unheld` events are written instead (the attempt's ACTIVE
   * event, which `events` carries as `activeAt`).
   */
  finished: { lease: Lease; events: EventRecord[]; unheld?: EventRecord[] }[];
}
export interface MessageRetryManyParams {
  retries: (Lease & { dueAt: number; retried: number })[];
}
export interface MessageReleaseManyParams {
  leases: Lease[];
  /** Due again at this time (usually now). */
  dueAt: number;
}
export interface MessageSpreadDueParams {
  /** The destination origin (`https://example.com:8443`, as `new URL(url).origin` gives it). */
  origin: string;
  /** Messages due at this time (`dueAt <= now`) are spread. */
  now: number;
  /** The first spread message's new due time. */
  from: number;
  /** Between two consecutive spread messages, ms (fractions allowed). */
  stepMs: number;
  /** Due times are rounded down to a whole number of these after `from`, ms (at least 1). */
  tickMs: number;
  /** At most this many messages, earliest due first. */
  limit: number;
}
export interface MessageDeleteManyParams {
  accountId: string;
  filter: RecordFilter;
  /** At most this many rows, oldest first (with `afterId`: in id order). */
  limit?: number;
  /**
   * Only rows whose id sorts after this one (`''`: all), taken in id order: a delete in chunks
   * passes the last id of the chunk before, so each chunk continues through the primary key where
   * the last one ended instead of reading (and sorting) every match again.
   */
  afterId?: string;
}

export interface EventInsertManyParams {
  events: EventRecord[];
}
export interface EventListParams {
  accountId: string;
  filter: RecordFilter;
  cursor?: string;
  /** Page size, newest first. */
  count: number;
  /**
   * Bodies longer than this many bytes come back cut to it, with their whole length in
   * `bodySize` (`responseBodySize`). The cut is made in SQL, so a list never reads a whole
   * large body into memory. Absent: whole bodies.
   */
  bodyCut?: number;
}
export interface EventDeleteBeforeParams {
  /** Deletes events with `time < before`. */
  before: number;
  /** At most this many rows per call, so pruning never holds the writer long. */
  limit: number;
}

export interface DlqInsertManyParams {
  entries: DlqEntry[];
}
export interface DlqGetParams {
  accountId: string;
  dlqId: string;
}
export interface DlqListParams {
  accountId: string;
  filter: RecordFilter;
  cursor?: string;
  /** Page size, newest first. */
  count: number;
  /**
   * Bodies longer than this many bytes come back cut to it, with their whole length in
   * `bodySize` (`responseBodySize`). The cut is made in SQL, so a list never reads a whole
   * large body into memory. Absent: whole bodies.
   */
  bodyCut?: number;
}
/** `messageList`: the account's messages that are not final, newest first. */
export interface MessageListParams {
  accountId: string;
  filter: RecordFilter;
  /** The last id of the previous page. */
  cursor?: string;
  count: number;
  /** Bodies longer than this many bytes come back cut, with `bodySize` (see `DlqListParams`). */
  bodyCut?: number;
  /** The time the messages' states are told at (see `MessageState`); without it, none is. */
  now?: number;
  /** Only messages in one of these states at `now` (which it then needs). */
  states?: MessageState[];
}
/**
 * Where a message that is not final stands: `active`, an attempt is in flight (a live lease);
 * `delayed`, due later (its delay, or a retry's wait), at `message.dueAt`; `due`, due and waiting
 * for a free delivery slot (or for its expired lease to be taken again); `waiting`, held in the
 * wait list of its flow-control key or queue.
 */
export type MessageState = 'active' | 'delayed' | 'due' | 'waiting';
/**
 * A message as `messageView` and `messageList` read it: its state at the given time (the list's
 * only when given one), and its whole body's length when the list cut it.
 */
export interface ListedMessage {
  message: Message;
  bodySize?: number;
  state?: MessageState;
}
export interface DlqDeleteManyParams {
  accountId: string;
  dlqIds: string[];
}
export interface DlqEvictOldestParams {
  accountId: string;
  /** The account's `max_dlq_size`: entries beyond it are deleted, oldest first. */
  maxSize: number;
}
export interface DlqDeleteExpiredParams {
  now: number;
  limit: number;
}

export interface RateCounterIncrementParams {
  /** Whose requests are counted (an account id). */
  subjectId: string;
  /** Start of the caller's current window, ms (its clock's now, floored to the window). */
  windowStart: number;
  /** Requests to add. */
  by: number;
}
export interface RateCounterIncrementResult {
  /** The window the count belongs to: the caller's, or a later one another node already began. */
  windowStart: number;
  /** Requests counted in that window, these included. */
  count: number;
}

export interface DedupClaimParams {
  accountId: string;
  key: string;
  /** The id of the message being published; stored if the key is free. */
  messageId: string;
  now: number;
  /** When the key becomes free again (now + the deduplication window). */
  expiresAt: number;
}
export interface DedupClaimResult {
  /** The id that owns the key: `messageId` when it was free, else the earlier message's. */
  messageId: string;
  duplicate: boolean;
}
export interface DedupDeleteExpiredParams {
  now: number;
  limit: number;
}

export interface UrlGroupGetParams {
  accountId: string;
  name: string;
}
export interface UrlGroupListParams {
  accountId: string;
}
export interface UrlGroupCountParams {
  accountId: string;
}
export interface UrlGroupPutParams {
  group: UrlGroup;
}
export interface UrlGroupDeleteParams {
  accountId: string;
  name: string;
}
export interface UrlGroupLockParams {
  accountId: string;
}
export interface ScheduleUpsertParams {
  schedule: Schedule;
  /** The account's `max_schedules`: creating one more than this is refused (replacing is not). */
  maxSchedules: number;
}
/** `created`, `replaced` (an existing schedule of that id was replaced entirely), or `limit`. */
export type ScheduleUpsertResult = 'created' | 'replaced' | 'limit';
export interface ScheduleGetParams {
  accountId: string;
  id: string;
}
export interface ScheduleListParams {
  accountId: string;
  /** As `EventListParams.bodyCut`: longer bodies come cut, with their length in `bodySize`. */
  bodyCut?: number;
}
export interface ScheduleDeleteParams {
  accountId: string;
  id: string;
}
export interface ScheduleSetPausedParams {
  accountId: string;
  id: string;
  paused: boolean;
  /** Replaces the next tick when given (resume computes it from now). */
  nextScheduleTime?: number;
}
export interface ScheduleClaimDueParams {
  now: number;
  limit: number;
}
export interface ScheduleAdvance {
  accountId: string;
  id: string;
  /** The tick that fired. */
  lastScheduleTime: number;
  /** The tick after it; absent when the expression has none (the schedule never fires again). */
  nextScheduleTime?: number;
  /** The messages the tick produced. */
  lastMessageIds: string[];
}
export interface ScheduleAdvanceManyParams {
  advances: ScheduleAdvance[];
}

export interface FlowGateAdmitParams {
  now: number;
  /** Most gates looked at in one call (each admits what its limits allow). */
  limit: number;
}
export interface FlowGateAdmitResult {
  /** Messages admitted: they are due now and the next claim takes them. */
  admitted: number;
  /** Gates looked at; equal to `limit` when more gates may be ready. */
  gates: number;
}
export interface FlowGateKeyParams {
  accountId: string;
  kind: FlowGateKind;
  name: string;
}
export interface FlowGateListParams {
  accountId: string;
  kind: FlowGateKind;
  /** Only gates whose name contains this text. */
  search?: string;
}
/** Changes to a gate; absent fields keep their value. */
export interface FlowGateUpdateParams extends FlowGateKeyParams {
  now: number;
  paused?: boolean;
  /** New parallelism; `null` removes the limit. */
  parallelism?: number | null;
  /** New rate; `null` removes the limit. */
  rate?: number | null;
  periodSec?: number;
  pinnedParallelism?: boolean;
  pinnedRate?: boolean;
  /** Starts a new rate period at `now` with no attempts counted. */
  resetRate?: boolean;
}
export interface QueueUpsertParams {
  accountId: string;
  name: string;
  now: number;
  /** Absent: 1 for a new queue, unchanged for an existing one. */
  parallelism?: number;
  paused?: boolean;
  /** The account's `max_queues`: creating one more than this is refused (updating is not). */
  maxQueues: number;
}
export type QueueUpsertResult = 'created' | 'updated' | 'limit';
export interface MessageCountInFlightParams {
  accountId: string;
  now: number;
}

export interface MessageCountByStateParams {
  now: number;
  /** Only this account's messages (the console's overview); absent: every account's. */
  accountId?: string;
  /**
   * Each count stops at this many rows: the gauges of `/metrics` read them at every scrape, and
   * a count must not become a scan of a large backlog. A count equal to `limit` means "at least".
   */
  limit: number;
}
/** Messages that are not final, by state (see `messageCountByState`). */
export interface MessageCounts {
  /** Due now and not being delivered (expired leases included: they are due again). */
  due: number;
  /** Due later: a delay, a not-before time or a retry's backoff. */
  delayed: number;
  /** Waiting behind a flow-control key or a queue to be admitted. */
  waiting: number;
  /** Leased and unexpired: being delivered by some node. */
  inFlight: number;
}
export interface WorkflowRunDeleteEndedParams {
  before: number;
  limit: number;
}

// ---- the contract -------------------------------------------------------------------------

/** Filters of the workflow logs and the workflow DLQ. OR within a field, AND across. */
export interface WorkflowRunFilter {
  runIds?: string[];
  /** Exact workflow URLs. */
  urls?: string[];
  /** Workflow URLs starting with any of these. */
  urlPrefixes?: string[];
  states?: WorkflowRunState[];
  labels?: string[];
  callerIps?: string[];
  flowControlKeys?: string[];
  /** Exact run creation time, ms. */
  createdAt?: number;
  /** Inclusive bounds, ms, on the run's creation time (in the DLQ: when it entered the DLQ). */
  fromDate?: number;
  toDate?: number;
  /** Only runs in the workflow DLQ (listed by DLQ id, newest first). */
  inDlq?: boolean;
  dlqIds?: string[];
  failureFunctionStates?: FailureFunctionState[];
  /** The workflow URL's host (with a port that is not the default) and path, as `urlParts`. */
  hosts?: string[];
  paths?: string[];
  /** Runs with a step (in the history the logs show) written by one of these messages. */
  messageIds?: string[];
  /** The last response status of the run's DLQ entry (its failed step's delivery). */
  responseStatuses?: number[];
}

export interface WorkflowRunInsertParams {
  run: WorkflowRun;
}
export interface WorkflowRunGetParams {
  accountId: string;
  runId: string;
  /**
   * In a transaction: lock the run's row until it ends (PostgreSQL `FOR UPDATE`; SQLite has one
   * writer), so a read-then-update of the run (its kept events) is not lost to a concurrent one.
   */
  lock?: boolean;
}
export interface WorkflowRunUpdateParams {
  /** Replaces every field of the stored run with these. */
  run: WorkflowRun;
  /** Applies only when the stored run is in this state. */
  ifState?: WorkflowRunState;
}
export interface WorkflowRunListParams {
  accountId: string;
  filter: WorkflowRunFilter;
  cursor?: string;
  /** Page size, newest first. */
  count: number;
}
export interface WorkflowStepAppendParams {
  /** The new entry; its `seq` is ignored: the store appends after the last one. */
  step: WorkflowStep;
}
export interface WorkflowWaiterInsertParams {
  waiter: WorkflowWaiter;
}
export interface WorkflowWaiterListParams {
  accountId: string;
  eventId: string;
}
export interface WorkflowWaiterDeleteParams {
  accountId: string;
  /** The waiter's id (its timeout message's id). */
  id: string;
}
export interface WorkflowStepListParams {
  accountId: string;
  runId: string;
  /**
   * Bodies longer than this many bytes come back cut to it, with their whole length in
   * `bodySize` (`responseBodySize`). The cut is made in SQL, so a list never reads a whole
   * large body into memory. Absent: whole bodies.
   */
  bodyCut?: number;
}

export interface TransactionOptions {
  /**
   * `true` (default): resolve only once the commit is on disk. `false`: resolve once committed;
   * the commit survives a process crash but may be lost on power loss, and never out of order
   * (any later durable commit makes it durable too). For writes that are redone when lost: lease
   * claims and delivery outcomes (the message is then delivered again, at least once).
   */
  durable?: boolean;
  /**
   * Called once the transaction has committed, before `transaction()` waits for durability:
   * other work of this process can see the writes from here on. The publisher wakes the engine
   * here, so a delivery need not wait for the publish's fsync (see engine/publisher.ts).
   */
  onCommit?: () => void;
}

/**
 * Claims and outcomes do not wait for their fsync: if a power loss takes one, the message is
 * simply delivered again (at least once). A process crash loses neither (see TransactionOptions).
 */
export const NOT_DURABLE = { durable: false } as const satisfies TransactionOptions;

/** All operations. A `Tx` is an executor whose operations run in one transaction. */
export interface Executor {
  /**
   * Runs `fn` in one transaction: all of its writes commit together or not at all. Nested
   * calls on a `Tx` run inside the outer transaction (their options are ignored). `fn` must use
   * only the `tx` it is given.
   */
  transaction<T>(fn: (tx: Executor) => Promise<T>, options?: TransactionOptions): Promise<T>;

  accountInsert(params: AccountInsertParams): Promise<void>;
  accountGet(params: AccountGetParams): Promise<Account | undefined>;
  accountUpdateSigningKeys(params: AccountUpdateSigningKeysParams): Promise<void>;
  /** The owner's accounts, oldest first. */
  accountList(params: AccountListParams): Promise<Account[]>;
  /** Changes the given fields; returns false when the account does not exist. */
  accountUpdate(params: AccountUpdateParams): Promise<boolean>;
  /**
   * Deletes the account and everything it owns: pending messages (leased ones too: their
   * in-flight attempts then write nothing), events, DLQ entries, deduplication keys and usage
   * counters. Returns false when the account does not exist.
   */
  accountDelete(params: AccountDeleteParams): Promise<boolean>;

  /** Rejects when the id or the e-mail is taken. */
  userInsert(params: UserInsertParams): Promise<void>;
  userGetByEmail(params: UserGetByEmailParams): Promise<ManagementUser | undefined>;

  /**
   * Adds each count to its (subject, minute, metric) counter, creating it at 0 first. Additive,
   * so nodes that flush the same minute sum up; counts for the same key in one call add up too.
   */
  usageAddMany(params: UsageAddManyParams): Promise<void>;
  /**
   * Sums of each metric per step of `[from, to)`: one bucket per step and metric that has any
   * count (steps without counts are absent). A series is one call, whatever its length.
   */
  usageSumByStep(params: UsageSumByStepParams): Promise<UsageBucket[]>;

  searchIndexInsert(params: SearchIndexInsertParams): Promise<void>;
  /** The index when `ownerId` owns it, else undefined. */
  searchIndexGet(params: SearchIndexGetParams): Promise<SearchIndex | undefined>;
  /** The owner's indexes, oldest first. */
  searchIndexList(params: SearchIndexListParams): Promise<SearchIndex[]>;
  /** Returns false when the owner has no such index. */
  searchIndexDelete(params: SearchIndexDeleteParams): Promise<boolean>;
  /** Changes the given fields; returns false when the owner has no such index. */
  searchIndexUpdate(params: SearchIndexUpdateParams): Promise<boolean>;

  messageInsertMany(params: MessageInsertManyParams): Promise<void>;
  /**
   * `messageInsertMany` and `eventInsertMany` together, all or nothing even outside a
   * transaction. PostgreSQL sends plain messages (no flow-control key or queue, bodies inline)
   * as one statement, which is its own transaction: the publisher's commit without BEGIN and
   * COMMIT.
   */
  /** Returns the ids of the messages stored leased (see `leaseLimits`). */
  messagePublishMany(params: MessagePublishManyParams): Promise<string[]>;
  messageGet(params: MessageGetParams): Promise<Message | undefined>;
  /** `messageGet` for the API: the message with its state at `now`. */
  messageView(
    params: MessageViewParams,
  ): Promise<(ListedMessage & { state: MessageState }) | undefined>;
  /**
   * One page of the account's messages that are not final (waiting, delayed, in flight, waiting
   * for a retry), newest first (by id, which sorts by creation time), matching `filter`.
   */
  messageList(params: MessageListParams): Promise<Page<ListedMessage>>;
  /**
   * Claims up to `limit` messages with `dueAt <= now`, earliest first, giving each a fresh
   * lease token and setting its `dueAt` to `leaseUntil`. Concurrent claimers never get the
   * same row.
   */
  messageClaimDue(params: MessageClaimDueParams): Promise<ClaimedMessage[]>;
  /**
   * The engine's claim: `messageClaimDue` under `max_global_parallelism`. Of the `limit` earliest
   * due messages, an account's beyond its free slots stay due, unclaimed, and the account is named
   * in `atLimit`. A lease counts until it ends or expires, so a dead node's share comes back when
   * its leases expire.
   *
   * PostgreSQL: exact across nodes. Limited claims run one at a time (a transaction-scoped
   * advisory lock, held until the caller's transaction ends; outside one, the claim is one
   * statement and holds it to its end) and count the leases committed before them, so two nodes
   * never both take an account's last slots. Outside a transaction the claim need not be
   * durable (a claim lost to a power loss only makes its messages due again). SQLite claims as `messageClaimDue` and names no account: one process owns the
   * database, and the engine counts each account's deliveries in memory (engine/account-slots.ts).
   */
  messageClaimDueLimited(
    params: MessageClaimDueLimitedParams,
  ): Promise<MessageClaimDueLimitedResult>;
  /**
   * Pushes the leases' expiry (their `dueAt`) to `leaseUntil`; returns the ids renewed. A lease
   * whose row another transaction holds is skipped rather than waited for (PostgreSQL).
   */
  messageLeaseExtendMany(params: MessageLeaseExtendManyParams): Promise<string[]>;
  /** Deletes leased rows (delivered, failed); returns the ids deleted. */
  messageDeleteLeasedMany(params: MessageDeleteLeasedManyParams): Promise<string[]>;
  /**
   * The outcome writer's usual commit: `eventInsertMany(events)`, `messageDeleteLeasedMany` of
   * the finished leases, then the events of those whose lease held, in that order; all or nothing
   * even outside a transaction, and not durable (as a transaction with `durable: false`). Returns
   * the ids deleted, in input order. PostgreSQL writes it as one statement when no event body is
   * stored apart: the commit without BEGIN, COMMIT and `SET LOCAL`. A message of a flow-control
   * key or queue, whose delete must also make its gate ready, is written there by a transaction
   * of its own after that statement (the outcome writer passes none).
   */
  messageFinishMany(params: MessageFinishManyParams): Promise<string[]>;
  /** Ends leases with a retry: sets `dueAt`, `retried`, clears the token; returns ids applied. */
  messageRetryManyLeased(params: MessageRetryManyParams): Promise<string[]>;
  /** Ends leases without an attempt (shutdown): due again at `dueAt`; returns ids applied. */
  messageReleaseMany(params: MessageReleaseManyParams): Promise<string[]>;
  /**
   * Fairness between destinations (engine/origin-limit.ts): of the messages to `origin` that are
   * due at `now`, not leased and not ordered by a flow-control gate, the `limit` earliest become
   * due one `stepMs` apart from `from`, in their due order (the n-th, from 0, at `from +
   * floor(n * stepMs / tickMs) * tickMs`). No attempt is counted. Returns the
   * last new due time, or undefined when none moved. Reads the due range (the due index): cheap
   * when little is due.
   */
  messageSpreadDue(params: MessageSpreadDueParams): Promise<number | undefined>;
  /** Deletes the account's messages matching `filter` (leased or not); returns them. */
  messageDeleteMany(params: MessageDeleteManyParams): Promise<Message[]>;
  /** The account's messages leased and not expired at `now`: its deliveries in flight. */
  messageCountInFlight(params: MessageCountInFlightParams): Promise<number>;
  /** Every account's messages by state, each count bounded by `limit` (metrics gauges). */
  messageCountByState(params: MessageCountByStateParams): Promise<MessageCounts>;

  /**
   * Admits waiting messages of flow-control keys and queues (see core/flow-control.ts): for up
   * to `limit` gates whose ready time has come, oldest first, moves the first waiting messages
   * (by due time, then publish order) that the gate's parallelism and rate allow into the due
   * set, and sets the gate's next ready time. `messageInsertMany` parks a gated message (its
   * gate is created or its limits updated, unless pinned); ending a slot's hold (delete,
   * a key's retry, cancel) makes its gate ready. Concurrent callers never admit for the same
   * gate at once (PostgreSQL: the gate row is locked, others skip it; SQLite: one writer).
   */
  flowGateAdmit(params: FlowGateAdmitParams): Promise<FlowGateAdmitResult>;
  flowGateGet(params: FlowGateKeyParams): Promise<FlowGate | undefined>;
  /** The account's gates of a kind, by name. */
  flowGateList(params: FlowGateListParams): Promise<FlowGate[]>;
  /** Applies the changes and makes the gate ready; undefined when it does not exist. */
  flowGateUpdate(params: FlowGateUpdateParams): Promise<FlowGate | undefined>;
  /**
   * Deletes the gate; returns false when it did not exist. Delete its waiting messages first
   * (`messageDeleteMany`): a message whose gate is gone waits forever.
   */
  flowGateDelete(params: FlowGateKeyParams): Promise<boolean>;
  /** Creates a queue or changes one; the count check and the write are atomic. */
  queueUpsert(params: QueueUpsertParams): Promise<QueueUpsertResult>;

  eventInsertMany(params: EventInsertManyParams): Promise<void>;
  /** The log, newest first. Every returned event carries the message's CREATED header/body. */
  eventList(params: EventListParams): Promise<Page<EventRecord>>;
  /**
   * Returns the number of rows deleted (a row may hold two events: an outcome and the ACTIVE
   * event it carries, which goes with it).
   */
  eventDeleteBefore(params: EventDeleteBeforeParams): Promise<number>;

  dlqInsertMany(params: DlqInsertManyParams): Promise<void>;

  /**
   * Deletes up to `limit` shared bodies that no message, event or DLQ entry references any
   * more; returns how many. A body's last reference going does not delete it at once (the same
   * transaction may reference it again), so the pruner calls this.
   */
  bodyDeleteUnreferenced(params: BodyDeleteUnreferencedParams): Promise<number>;
  /** How many shared bodies are stored, and their bytes (tests, the security doc's figures). */
  bodyUsage(): Promise<BodyUsage>;
  dlqGet(params: DlqGetParams): Promise<DlqEntry | undefined>;
  /** Newest first. */
  dlqList(params: DlqListParams): Promise<Page<DlqEntry>>;
  /** Returns the number of entries deleted. */
  dlqDeleteMany(params: DlqDeleteManyParams): Promise<number>;
  /** Number of DLQ entries of the account. */
  dlqCount(params: DlqCountParams): Promise<number>;
  /** Entries in every account's DLQ, from the sizes the triggers keep (no count of the table). */
  dlqCountAll(): Promise<number>;
  /**
   * Runs in the workflow DLQ of `accountId`, or of every account, at most `limit` (a bounded
   * read of the DLQ's partial index, as the message counts are).
   */
  workflowDlqCount(params: { accountId?: string; limit: number }): Promise<number>;
  /** Deletes entries with `expiresAt <= now`; returns the number deleted. */
  dlqDeleteExpired(params: DlqDeleteExpiredParams): Promise<number>;
  /**
   * Deletes the account's oldest entries (by `dlqId`, which sorts by creation time) beyond
   * `maxSize` and returns them, oldest first. The size is kept per account by the database on
   * every insert and delete, so the check costs no count. Call it in the transaction that
   * inserted the entries: on PostgreSQL that transaction holds the account's size row, so
   * concurrent evictions of one account run one after the other.
   */
  dlqEvictOldest(params: DlqEvictOldestParams): Promise<DlqEntry[]>;

  /**
   * Counts requests of a subject in fixed windows (max_requests_per_second): adds `by` to the
   * subject's count when `windowStart` is its current window, starts the count over when it is
   * a later one, and counts a request from an earlier window (a node whose clock is behind) in
   * the current one. Atomic across nodes. PostgreSQL: one row per subject, UPSERT with
   * increment. SQLite: in the process's memory, no I/O (one process owns the database, so memory
   * is shared by every request; a restart starts the current second over).
   */
  rateCounterIncrement(params: RateCounterIncrementParams): Promise<RateCounterIncrementResult>;

  /**
   * Inside a transaction: waits until no other transaction changes the account's URL groups,
   * until this one ends, so a read-modify-write of a group (and the max_topics count) cannot race
   * another node's. PostgreSQL: a transaction-scoped advisory lock; SQLite: nothing to do (one
   * writer at a time).
   */
  urlGroupLock(params: UrlGroupLockParams): Promise<void>;
  urlGroupGet(params: UrlGroupGetParams): Promise<UrlGroup | undefined>;
  /** The account's groups by name. */
  urlGroupList(params: UrlGroupListParams): Promise<UrlGroup[]>;
  urlGroupCount(params: UrlGroupCountParams): Promise<number>;
  /** Inserts the group or replaces the stored one of that account and name entirely. */
  urlGroupPut(params: UrlGroupPutParams): Promise<void>;
  /** Returns false when there was no such group. */
  urlGroupDelete(params: UrlGroupDeleteParams): Promise<boolean>;

  /** Atomically takes a deduplication key unless an unexpired owner holds it. */
  dedupClaim(params: DedupClaimParams): Promise<DedupClaimResult>;
  dedupDeleteExpired(params: DedupDeleteExpiredParams): Promise<number>;

  /**
   * Creates a schedule, or replaces the account's schedule of the same id entirely (its tick
   * history included). A new schedule beyond `maxSchedules` is refused with `limit`. The count
   * and the write are atomic, also across nodes.
   */
  scheduleUpsert(params: ScheduleUpsertParams): Promise<ScheduleUpsertResult>;
  scheduleGet(params: ScheduleGetParams): Promise<Schedule | undefined>;
  /** The account's schedules, oldest first. */
  scheduleList(params: ScheduleListParams): Promise<Schedule[]>;
  /** Returns whether a schedule was deleted. */
  scheduleDelete(params: ScheduleDeleteParams): Promise<boolean>;
  /** Pauses or resumes; returns whether the schedule exists. */
  scheduleSetPaused(params: ScheduleSetPausedParams): Promise<boolean>;
  /**
   * Up to `limit` schedules that are not paused with `nextScheduleTime <= now`, earliest first.
   * Call it inside `transaction()` and advance what it returns (`scheduleAdvanceMany`) in the
   * same transaction: that makes a tick fire exactly once. PostgreSQL locks the returned rows
   * until the transaction ends and other claimers skip them (`FOR UPDATE SKIP LOCKED`); SQLite's
   * single writer serializes the transactions anyway.
   */
  scheduleClaimDue(params: ScheduleClaimDueParams): Promise<Schedule[]>;
  /** Records fired ticks: last/next tick times and the produced message ids. */
  scheduleAdvanceMany(params: ScheduleAdvanceManyParams): Promise<void>;
  /** The earliest `nextScheduleTime` of any schedule that is not paused, or undefined. */
  scheduleNextDueAt(): Promise<number | undefined>;

  /** Inserts a run; false (nothing written) when the account already has a run of that id. */
  workflowRunInsert(params: WorkflowRunInsertParams): Promise<boolean>;
  workflowRunGet(params: WorkflowRunGetParams): Promise<WorkflowRun | undefined>;
  /** Replaces a run's fields; false when it does not exist or is not in `ifState`. */
  workflowRunUpdate(params: WorkflowRunUpdateParams): Promise<boolean>;
  /** Newest first (by DLQ id with `filter.inDlq`, else by creation time). */
  workflowRunList(params: WorkflowRunListParams): Promise<Page<WorkflowRun>>;
  /** Appends a history entry after the run's last one; returns its `seq`. */
  workflowStepAppend(params: WorkflowStepAppendParams): Promise<number>;
  /** A run's whole history, by `seq`. */
  workflowStepList(params: WorkflowStepListParams): Promise<WorkflowStep[]>;
  /**
   * Retention: deletes up to `limit` runs that ended (any state but `RUN_STARTED`), are not in
   * the workflow DLQ, and were last updated before `before`, with their history; returns the
   * number of runs deleted.
   */
  workflowRunDeleteEnded(params: WorkflowRunDeleteEndedParams): Promise<number>;

  /** Stores a run waiting for an event (ids are unique per account). */
  workflowWaiterInsert(params: WorkflowWaiterInsertParams): Promise<void>;
  /** The account's waiters of an event, oldest first. */
  workflowWaiterList(params: WorkflowWaiterListParams): Promise<WorkflowWaiter[]>;
  /**
   * Deletes a waiter; true only for the caller that deleted it. A notify and the timeout each
   * delete the waiter in their transaction and act only when they did, so exactly one of them
   * wakes the run (PostgreSQL: a concurrent delete waits for the first one's commit, then finds
   * nothing; SQLite: one writer).
   */
  workflowWaiterDelete(params: WorkflowWaiterDeleteParams): Promise<boolean>;
}

export interface MigrationStatus {
  /** Versions of this build's migrations that the database has not applied (oldest first). */
  pending: number[];
  /** The highest version this build knows. */
  latest: number;
}

export interface Driver {
  readonly name: 'sqlite' | 'postgres';
  readonly executor: Executor;
  /** Applies pending numbered migrations, under a lock so concurrent starters do not race. */
  migrate(): Promise<void>;
  /**
   * Subscribes to wake-ups published by `notifyWake` on any node sharing the database.
   * SQLite has one process per database file, so it never calls back (the engine is woken
   * in-process); PostgreSQL uses LISTEN/NOTIFY. `onWake` gets the due time the notifier sent
   * (ms), or undefined for "now" (an empty payload, as nodes before it was added send).
   */
  listenWake(onWake: (dueAt: number | undefined) => void): Promise<() => Promise<void>>;
  /**
   * Tells every listener that something is due at `dueAt` (ms; omitted: now). Only the due time
   * travels: a listener claims at that time and reads what is due then.
   */
  notifyWake(dueAt?: number): Promise<void>;
  /**
   * Readiness: answers the numbered migrations this build knows and those applied in the
   * database. Throws when the database does not answer (unreachable, no such schema, closed).
   */
  migrationStatus(): Promise<MigrationStatus>;
  /**
   * Copies the database, online, into a new file at `path` (`ferry backup`). SQLite only: its
   * file is locked by this process, so only this process can copy it. PostgreSQL leaves it out;
   * its own tools (`pg_dump`, `pg_basebackup`) back it up.
   */
  backup?(path: string): Promise<void>;
  /**
   * Opens a few of the connections a serving node will need at once, so that its first requests
   * do not each wait for one (PostgreSQL; a server start calls it after `migrate`).
   */
  openConnections?(): Promise<void>;
  /**
   * Readiness: true while storage has no room to write, that is while the last write failed
   * for lack of space (SQLite's `SQLITE_FULL`: the disk, or `--sqlite-max-size`) and none has
   * succeeded since. PostgreSQL leaves it out: its disk-full errors reach the requests that
   * write, and its readiness is the server's.
   */
  storageFull?(): boolean;
  /** Closes connections; pending operations finish first. Idempotent. */
  close(): Promise<void>;
}
