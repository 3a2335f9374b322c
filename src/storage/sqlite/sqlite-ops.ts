/**
 * The storage operations on one better-sqlite3 connection, synchronous. `sqlite-executor.ts`
 * wraps them in the async contract; the SQL of the SQLite driver lives here.
 *
 * Statements are prepared once and cached by their SQL text (`sqlite-statements.ts`). Multi-row
 * writes run atomically (`BEGIN IMMEDIATE`, or a SAVEPOINT inside an open transaction), so a
 * `…Many` call is all-or-nothing and pays one commit, not one per row.
 */
import type Database from 'better-sqlite3';
import type {
  Account,
  ClaimedMessage,
  DlqEntry,
  EventRecord,
  Message,
  MessageSpec,
  UrlGroup,
} from '../../core/types.js';
import { isLeased } from '../../core/types.js';
import { badRequest } from '../../core/errors.js';
import { newLeaseToken } from '../../core/ids.js';
import { LeaseTable } from './lease-table.js';
import { FirstClaimCache } from './first-claim-cache.js';
import { SqliteLimitOps } from './sqlite-limit-ops.js';
import type {
  AccountGetParams,
  AccountInsertParams,
  AccountUpdateSigningKeysParams,
  DedupClaimParams,
  DedupClaimResult,
  DedupDeleteExpiredParams,
  DlqDeleteExpiredParams,
  DlqDeleteManyParams,
  DlqGetParams,
  DlqInsertManyParams,
  DlqListParams,
  EventDeleteBeforeParams,
  EventInsertManyParams,
  EventListParams,
  Lease,
  MessageClaimDueLimitedParams,
  MessageClaimDueParams,
  MessageCountInFlightParams,
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
  RecordFilter,
  UrlGroupCountParams,
  UrlGroupDeleteParams,
  UrlGroupGetParams,
  UrlGroupListParams,
  UrlGroupPutParams,
} from '../driver.js';
import {
  ACTIVE_EVENT_FILTER,
  buildFilter,
  EVENT_FILTER,
  MESSAGE_FILTER,
  eventPartBounds,
  originParts,
  type FilterColumns,
} from '../sql/filter.js';
import { originOf } from '../../core/origin.js';
import { ORIGIN_SKIP_SCAN } from '../driver.js';
import {
  ACCOUNT_COLUMNS,
  DLQ_COLUMNS,
  EVENT_COLUMNS,
  CLAIM_COLUMNS,
  claimedFromColumns,
  MESSAGE_COLUMNS,
  accountParams,
  byCreatedAt,
  dlqParams,
  eventParams,
  messageParams,
} from './sqlite-rows.js';
import {
  accountFromRow,
  dlqFromRow,
  eventFromRow,
  messageFromRow,
  messageStateOf,
  type AccountRow,
  type DlqRow,
  type EventRow,
  type MessageRow,
  type UrlGroupRow,
  urlGroupFromRow,
  urlGroupJson,
} from '../sql/rows.js';
import { SqliteManagementOps } from './sqlite-management-ops.js';
import { SqliteScheduleOps } from './sqlite-schedules.js';
import { SqliteWorkflowOps } from './sqlite-workflows.js';
import { SqliteFlowGateOps } from './sqlite-flow-gates.js';
import { SqliteStatsOps } from './sqlite-stats.js';
import { gateOf, PARKED_DUE_AT } from '../../core/flow-control.js';
import { SqliteStatements, type Statement } from './sqlite-statements.js';
import { SqliteBodyOps } from './sqlite-bodies.js';
import { bodiesToStore, bodyIdsOf, fillBodies, rememberBodyId } from '../sql/bodies.js';

const DLQ_FILTER: FilterColumns = {
  messageId: 'message_id',
  dlqId: 'dlq_id',
  responseStatus: 'response_status',
  time: 'created_at',
};

// SQLite's substr() of an empty BLOB is NULL, hence `ifnull(substr(x, …), x)` throughout (for
// PostgreSQL, substring() of an empty bytea is an empty bytea).

/** Every column of a message row but its body (a list reads the body cut). */
const LISTED_MESSAGE_COLUMNS =
  'id, account_id, url, url_host, url_path, topic_name, endpoint_name, queue_name, schedule_id, ' +
  'labels, flow_control_key, caller_ip, retried, max_retries, not_before, created_at, due_at, ' +
  'lease_token, spec, wait_due_at, body_id';

/** A cut longer than any body: the list reads bodies whole. */
const WHOLE = 2_147_483_647;
/** The response body cut to the first `?` bytes, and its whole length. */
const CUT_RESPONSE_BODY =
  'ifnull(substr(response_body, 1, ?), response_body) AS response_body, ' +
  'length(response_body) AS response_body_size';

const placeholders = (n: number): string => Array.from({ length: n }, () => '?').join(', ');

// Hot-path SQL texts, built once: the statement cache is keyed by the text.
const INSERT_ACCOUNT = `INSERT INTO accounts (${ACCOUNT_COLUMNS}) VALUES (${placeholders(11)})`;
const SELECT_ACCOUNT = `SELECT ${ACCOUNT_COLUMNS} FROM accounts WHERE id = ?`;
const INSERT_MESSAGE = `INSERT INTO messages (${MESSAGE_COLUMNS}) VALUES (${placeholders(22)})`;
const INSERT_GATED_MESSAGE =
  `INSERT INTO messages (${MESSAGE_COLUMNS}, gate_id, gate_mode, wait_due_at) ` +
  `VALUES (${placeholders(25)})`;
/** Index of `due_at` and of the spec's JSON in `messageParams`. */
const DUE_AT_PARAM = 16;
const SPEC_PARAM = 18;
/** A message due this soon after its creation is kept for its first claim (FirstClaimCache). */
const FIRST_CLAIM_WINDOW_MS = 1_000;
const CLAIM_ROW = `SELECT ${CLAIM_COLUMNS} FROM messages WHERE id = ?`;
const DELETE_LEASED =
  'DELETE FROM messages WHERE id IN (SELECT value FROM json_each(?)) RETURNING id, gate_id';
/**
 * Rows one DELETE_LEASED statement deletes at most. Inside a transaction SQLite copies every page
 * a statement changes into its statement journal, in memory up to 64 KiB and in a temporary file
 * beyond; once a statement has spilled, each later statement of the transaction writes its pages
 * to that file too. Deleting 64 of the benchmark's delivered messages in one statement spilled,
 * and the writes that followed took about 9 % of the main thread (docs/benchmarks-log.md). In a script
 * on this schema, chunks of 32 never spilled with bodies from 110 bytes to 3 KB (larger rows free
 * whole pages, which are not copied); 16 is half of that.
 */
const DELETE_CHUNK = 16;
const INSERT_EVENT = `INSERT INTO events (${EVENT_COLUMNS}) VALUES (${placeholders(27)})`;
const INSERT_DLQ = `INSERT INTO dlq (${DLQ_COLUMNS}) VALUES (${placeholders(21)})`;
/** Index of `body` and `body_id` in a CLAIM_COLUMNS row. */
const CLAIM_BODY = 9;
const CLAIM_BODY_ID = 14;

export class SqliteOps {
  /** Shared by every part of the ops: one transaction state per connection. */
  readonly statements: SqliteStatements;

  /** In-memory leases; the executor journals them with its transactions. */
  readonly leases = new LeaseTable();

  /** Messages inserted due at once, for their first claim without reading the row back. */
  private readonly firstClaims = new FirstClaimCache();

  /** Users, account settings, usage counters, search indexes (sqlite-management-ops.ts). */
  readonly management: SqliteManagementOps;

  /** The schedule operations (`sqlite-schedules.ts`), on the same connection. */
  readonly schedules: SqliteScheduleOps;

  /** Workflow runs and their history (`sqlite-workflows.ts`), on the same connection. */
  readonly workflows: SqliteWorkflowOps;
  /** DLQ eviction and the request-rate counter (`sqlite-limit-ops.ts`). */
  readonly limits: SqliteLimitOps;
  /** Flow-control keys and queues (`sqlite-flow-gates.ts`). */
  readonly flowGates: SqliteFlowGateOps;
  /** Bounded counts for the metrics gauges (`sqlite-stats.ts`). */
  readonly stats: SqliteStatsOps;
  /** Shared bodies (`sqlite-bodies.ts`, migration 011). */
  readonly bodies: SqliteBodyOps;

  constructor(private readonly db: Database.Database) {
    this.statements = new SqliteStatements(db);
    this.bodies = new SqliteBodyOps(this.statements);
    this.management = new SqliteManagementOps(this.statements, this.leases);
    this.schedules = new SqliteScheduleOps(this.statements);
    this.workflows = new SqliteWorkflowOps(this.statements);
    this.limits = new SqliteLimitOps(this.statements, (rows) => this.withBodies(rows));
    this.flowGates = new SqliteFlowGateOps(this.statements);
    this.stats = new SqliteStatsOps(this.statements, this.leases);
  }

  private stmt(sql: string): Statement {
    return this.statements.get(sql);
  }

  private dynamicStmt(sql: string): Statement {
    return this.statements.getDynamic(sql);
  }

  /**
   * `fn` all or nothing, its lease changes included: an operation that fails after deleting a
   * lease (an insert after a fenced delete) puts it back, at the root as in a savepoint.
   */
  private inTransaction<T>(fn: () => T): T {
    const root = !this.db.inTransaction;
    if (root) this.leases.begin();
    const mark = this.leases.mark();
    try {
      const result = this.statements.atomic(fn);
      if (root) this.leases.commit();
      return result;
    } catch (error) {
      if (root) this.leases.rollback();
      else this.leases.rollbackTo(mark);
      throw error;
    }
  }

  // ---- accounts ---------------------------------------------------------------------------

  accountInsert({ account }: AccountInsertParams): void {
    this.stmt(INSERT_ACCOUNT).run(...accountParams(account));
  }

  accountGet({ id }: AccountGetParams): Account | undefined {
    const row = this.stmt(SELECT_ACCOUNT).get(id);
    return row === undefined ? undefined : accountFromRow(row as AccountRow);
  }

  accountUpdateSigningKeys(p: AccountUpdateSigningKeysParams): void {
    this.stmt('UPDATE accounts SET current_signing_key = ?, next_signing_key = ? WHERE id = ?').run(
      p.currentSigningKey,
      p.nextSigningKey,
      p.id,
    );
  }

  // ---- URL groups -------------------------------------------------------------------------

  urlGroupGet({ accountId, name }: UrlGroupGetParams): UrlGroup | undefined {
    const row = this.stmt('SELECT * FROM url_groups WHERE account_id = ? AND name = ?').get(
      accountId,
      name,
    );
    return row === undefined ? undefined : urlGroupFromRow(row as UrlGroupRow);
  }

  urlGroupList({ accountId }: UrlGroupListParams): UrlGroup[] {
    const rows = this.stmt('SELECT * FROM url_groups WHERE account_id = ? ORDER BY name').all(
      accountId,
    ) as UrlGroupRow[];
    return rows.map(urlGroupFromRow);
  }

  urlGroupCount({ accountId }: UrlGroupCountParams): number {
    const row = this.stmt('SELECT count(*) AS n FROM url_groups WHERE account_id = ?').get(
      accountId,
    ) as { n: number };
    return row.n;
  }

  urlGroupPut({ group: g }: UrlGroupPutParams): void {
    this.stmt(
      'INSERT OR REPLACE INTO url_groups ' +
        '(account_id, name, created_at, updated_at, endpoints, headers) VALUES (?, ?, ?, ?, ?, ?)',
    ).run(g.accountId, g.name, g.createdAt, g.updatedAt, ...urlGroupJson(g));
  }

  urlGroupDelete({ accountId, name }: UrlGroupDeleteParams): boolean {
    return (
      this.stmt('DELETE FROM url_groups WHERE account_id = ? AND name = ?').run(accountId, name)
        .changes > 0
    );
  }

  // ---- messages ---------------------------------------------------------------------------

  messagePublishMany({ messages, events }: MessagePublishManyParams): string[] {
    this.inTransaction(() => {
      this.messageInsertMany({ messages });
      this.eventInsertMany({ events });
    });
    return messages.filter(isLeased).map((m) => m.id);
  }

  messageInsertMany({ messages }: MessageInsertManyParams): void {
    if (messages.length === 0) return;
    this.inTransaction(() => {
      this.bodies.store(bodiesToStore(messages.map((m) => m.body)));
      const insert = this.stmt(INSERT_MESSAGE);
      for (const message of messages) {
        const gate = gateOf(message);
        if (!gate) {
          if (!isLeased(message)) {
            const params = messageParams(message);
            insert.run(...params);
            if (message.dueAt <= message.createdAt + FIRST_CLAIM_WINDOW_MS) {
              this.firstClaims.add(message, params[SPEC_PARAM] as string);
            }
            continue;
          }
          // Stored leased to the engine (Engine.reserve): the lease in memory, as a claim's,
          // and the row due from its creation, as the claim would have found it.
          this.leases.set(message.id, { token: message.leaseToken, until: message.dueAt });
          const params = messageParams(message);
          params[DUE_AT_PARAM] = message.createdAt;
          insert.run(...params);
          continue;
        }
        // A gated message waits parked (out of the due index) until its gate admits it; a
        // callback of a queued message takes its source's queue slot at once.
        const waitDueAt = gate.mode === 'wait' ? message.dueAt : undefined;
        const entered = this.flowGates.enter(message.accountId, gate, message.createdAt, waitDueAt);
        const params = messageParams(message);
        if (entered.waits) params[DUE_AT_PARAM] = PARKED_DUE_AT;
        this.stmt(INSERT_GATED_MESSAGE).run(
          ...params,
          entered.id,
          gate.kind,
          entered.waits ? waitDueAt : null,
        );
      }
    });
  }

  messageGet(p: MessageGetParams): Message | undefined {
    // The message alone: its state, told at any time, is not used.
    return this.messageView({ ...p, now: 0 })?.message;
  }

  messageView({
    accountId,
    id,
    now,
  }: MessageViewParams): (ListedMessage & { state: MessageState }) | undefined {
    const row = this.stmt('SELECT * FROM messages WHERE id = ? AND account_id = ?').get(
      id,
      accountId,
    );
    if (row === undefined) return undefined;
    const [whole] = this.withBodies([row as MessageRow]);
    return whole && this.listed(whole, now);
  }

  /** Like `dlqList`: bodies cut in SQL, newest first by id, the cursor is the last id. */
  messageList({
    accountId,
    filter,
    cursor,
    count,
    bodyCut,
    now,
    states,
  }: MessageListParams): Page<ListedMessage> {
    const { where, params } = filterSql(filter, MESSAGE_FILTER);
    const state = states === undefined ? undefined : this.stateSql(states, now ?? 0);
    const sql =
      `SELECT ${LISTED_MESSAGE_COLUMNS}, ifnull(substr(body, 1, ?), body) AS body, ` +
      `length(body) AS body_size FROM messages WHERE account_id = ? AND ${where}` +
      (state === undefined ? '' : ` AND ${state.where}`) +
      (cursor === undefined ? '' : ' AND id < ?') +
      ' ORDER BY id DESC LIMIT ?';
    const args: unknown[] = [bodyCut ?? WHOLE, accountId, ...params, ...(state?.params ?? [])];
    if (cursor !== undefined) args.push(cursor);
    const read = this.dynamicStmt(sql).all(...args, count + 1) as (MessageRow & {
      body_size: number;
    })[];
    const rows = this.withBodies(read, bodyCut);
    const listed = rows.map((row) => {
      const { message, state } = this.listed(row, now ?? 0);
      return {
        message,
        ...(now === undefined ? {} : { state }),
        ...(row.body.length < row.body_size ? { bodySize: row.body_size } : {}),
      };
    });
    return page(listed, count, (last) => last.message.id);
  }

  /**
   * Claims are reads: leases live in memory (`lease-table.ts`), so a claim writes nothing.
   * Unlike PostgreSQL, where many nodes share the table and a claim must mark the row (`FOR
   * UPDATE SKIP LOCKED`), one process owns a SQLite file. Leased rows keep their `due_at`, so
   * the scan reads past them (at most one row per live lease).
   */
  messageClaimDue({ now, limit, leaseUntil }: MessageClaimDueParams): ClaimedMessage[] {
    if (limit <= 0) return [];
    const due = this.stmt('SELECT id FROM messages WHERE due_at <= ? ORDER BY due_at LIMIT ?')
      .pluck(true)
      .all(now, limit + this.leases.size) as string[];
    const select = this.stmt(CLAIM_ROW).raw(true);
    const claimed: ClaimedMessage[] = [];
    for (const id of due) {
      if (claimed.length === limit) break;
      const message = this.claimRow(select, id, now, leaseUntil);
      if (message) claimed.push(message);
    }
    return claimed;
  }
  /**
   * The claim with per-origin rooms (`originRooms`): the due rows are read in chunks, in due
   * order, and a limited origin's rows beyond its room are passed over, up to ORIGIN_SKIP_SCAN of
   * them, so the claim reaches other origins' messages behind a congested origin's backlog.
   */
  messageClaimDueRooms(p: MessageClaimDueLimitedParams): ClaimedMessage[] {
    const { now, limit, leaseUntil, originRooms = [] } = p;
    if (originRooms.length === 0) return this.messageClaimDue(p);
    const room = new Map(originRooms.map((r) => [r.origin, r.room]));
    const select = this.stmt(CLAIM_ROW).raw(true);
    const claimed: ClaimedMessage[] = [];
    const chunk = this.stmt(
      'SELECT due_at, rowid, id, url FROM messages WHERE due_at <= ? AND (due_at, rowid) > (?, ?) ' +
        'ORDER BY due_at, rowid LIMIT ?',
    ).raw(true);
    let after: [number, number] = [Number.MIN_SAFE_INTEGER, 0];
    let passed = 0;
    let size = limit + this.leases.size;
    while (claimed.length < limit && passed <= ORIGIN_SKIP_SCAN) {
      const rows = chunk.all(now, ...after, size) as [number, number, string, string][];
      for (const [, , id, url] of rows) {
        if (claimed.length === limit) break;
        const origin = originOf(url);
        const left = room.get(origin);
        if (left === 0) {
          passed += 1;
          continue;
        }
        const message = this.claimRow(select, id, now, leaseUntil);
        if (!message) continue;
        claimed.push(message);
        if (left !== undefined) room.set(origin, left - 1);
      }
      if (rows.length < size) break;
      const last = rows[rows.length - 1]!;
      after = [last[0], last[1]];
      size = 2_000;
    }
    return claimed;
  }
  /** Leases the due row `id` unless it is leased already; undefined when it is (or is gone). */
  private claimRow(
    select: Statement,
    id: string,
    now: number,
    leaseUntil: number,
  ): ClaimedMessage | undefined {
    if (this.leases.isLeased(id, now)) return undefined;
    const first = this.firstClaims.take(id);
    if (first !== undefined) {
      const leaseToken = newLeaseToken();
      this.leases.set(id, { token: leaseToken, until: leaseUntil });
      // Taken out of the cache, the kept message is this claim's own: its spec a fresh parse of
      // the stored JSON, as from the row.
      const claimed = first.message;
      claimed.spec = JSON.parse(first.spec) as MessageSpec;
      claimed.dueAt = leaseUntil;
      claimed.leaseToken = leaseToken;
      return claimed;
    }
    const row = select.get(id) as unknown[] | undefined;
    if (!row) return undefined;
    const bodyId = row[CLAIM_BODY_ID];
    if (typeof bodyId === 'string') {
      const body = this.bodies.load([bodyId], undefined).get(bodyId)?.bytes ?? Buffer.alloc(0);
      rememberBodyId(body, bodyId);
      row[CLAIM_BODY] = body;
    }
    const leaseToken = newLeaseToken();
    this.leases.set(id, { token: leaseToken, until: leaseUntil });
    return claimedFromColumns(row, leaseUntil, leaseToken);
  }
  /** The claim's `nextDueAt` after `after`, its `now` (see MessageClaimDueLimitedResult). */
  nextDueAfter(after: number): number | undefined {
    // The earliest row that is not leased (leased rows keep an old due_at), or the earliest
    // lease expiry, whichever comes first.
    const rows = this.stmt(
      'SELECT id, due_at FROM messages WHERE due_at > ? AND due_at < ? ORDER BY due_at LIMIT ?',
    ).all(after, PARKED_DUE_AT, this.leases.size + 1) as { id: string; due_at: number }[];
    const free = rows.find((r) => this.leases.get(r.id) === undefined)?.due_at;
    const lease = this.leases.earliestUntil(after);
    // A gate that is ready (even at or before `after`) means admission has work to do.
    const gate = (
      this.stmt('SELECT min(ready_at) AS t FROM flow_gates WHERE ready_at IS NOT NULL').get() as {
        t: number | null;
      }
    ).t;
    const times = [free, lease, gate ?? undefined].filter((t): t is number => t !== undefined);
    return times.length === 0 ? undefined : Math.min(...times);
  }
  messageLeaseExtendMany({ leases, leaseUntil }: MessageLeaseExtendManyParams): string[] {
    const held = leases.filter((l) => this.leases.holds(l.id, l.leaseToken));
    for (const l of held) this.leases.set(l.id, { token: l.leaseToken, until: leaseUntil });
    return held.map((l) => l.id);
  }
  /** Durable at the root like every write here: stronger than the contract asks. */
  messageFinishMany({ events, finished }: MessageFinishManyParams): string[] {
    return this.inTransaction(() => {
      this.eventInsertMany({ events });
      const deleted = this.messageDeleteLeasedMany({ leases: finished.map((f) => f.lease) });
      const held = new Set(deleted);
      this.eventInsertMany({
        events: finished.flatMap((f) => (held.has(f.lease.id) ? f.events : (f.unheld ?? []))),
      });
      return deleted;
    });
  }
  /**
   * One statement per DELETE_CHUNK leases (the ids as one JSON parameter), where the other fenced
   * operations run one per lease: this is the outcome writer's hot path, and at the storage layer
   * it measured 1.3–2.3 µs less per delivered message (docs/benchmarks-log.md).
   */
  messageDeleteLeasedMany({ leases }: MessageDeleteLeasedManyParams): string[] {
    const held = leases.filter((l) => this.leases.holds(l.id, l.leaseToken));
    if (held.length === 0) return [];
    return this.inTransaction(() => {
      const statement = this.stmt(DELETE_LEASED).raw(true);
      const rows: [string, number | null][] = [];
      for (let i = 0; i < held.length; i += DELETE_CHUNK) {
        const ids = held.slice(i, i + DELETE_CHUNK).map((l) => l.id);
        rows.push(...(statement.all(JSON.stringify(ids)) as [string, number | null][]));
      }
      return this.endFenced(held, rows);
    });
  }
  /** A flow-control key's message waits again for its retry (its slot was for one attempt). */
  messageRetryManyLeased({ retries }: MessageRetryManyParams): string[] {
    return this.fenced(
      retries,
      "UPDATE messages SET due_at = CASE WHEN gate_mode = 'key' THEN ? ELSE ? END, " +
        "wait_due_at = CASE WHEN gate_mode = 'key' THEN ? END, retried = ? WHERE id = ? " +
        "RETURNING CASE WHEN gate_mode = 'key' THEN gate_id END AS gate_id",
      (retry) => [PARKED_DUE_AT, retry.dueAt, retry.dueAt, retry.retried, retry.id],
    );
  }
  messageReleaseMany({ leases, dueAt }: MessageReleaseManyParams): string[] {
    return this.fenced(
      leases,
      'UPDATE messages SET due_at = ? WHERE id = ? RETURNING NULL AS gate_id',
      (lease) => [dueAt, lease.id],
    );
  }
  /**
   * The due range of the due index, filtered to the origin's ungated rows; leased rows (their
   * leases live in memory and they keep their old `due_at`) are skipped, as the claim does.
   */
  messageSpreadDue(p: MessageSpreadDueParams): number | undefined {
    const { origin, now, from, stepMs, tickMs, limit } = p;
    const parts = originParts(origin);
    if (!parts || limit <= 0) return undefined;
    const rows = this.stmt(
      'SELECT id FROM messages WHERE due_at <= ? AND url_host = ? AND gate_id IS NULL ' +
        'AND lower(substr(url, 1, ?)) = ? ORDER BY due_at LIMIT ?',
    ).all(now, parts.host, parts.scheme.length, parts.scheme, limit + this.leases.size) as {
      id: string;
    }[];
    const update = this.stmt('UPDATE messages SET due_at = ? WHERE id = ?');
    let n = 0;
    let last: number | undefined;
    for (const { id } of rows) {
      if (n === limit) break;
      if (this.leases.get(id) !== undefined) continue;
      last = from + Math.floor((n * stepMs) / tickMs) * tickMs;
      update.run(last, id);
      n += 1;
    }
    return last;
  }
  messageCountInFlight({ accountId, now }: MessageCountInFlightParams): number {
    const accountOf = this.stmt('SELECT account_id FROM messages WHERE id = ?');
    let count = 0;
    for (const id of this.leases.liveIds(now)) {
      const row = accountOf.get(id) as { account_id: string } | undefined;
      if (row?.account_id === accountId) count += 1;
    }
    return count;
  }
  messageDeleteMany({ accountId, filter, limit, afterId }: MessageDeleteManyParams): Message[] {
    const { where, params } = filterSql(filter, MESSAGE_FILTER);
    const after = afterId === undefined ? [] : [afterId];
    const scoped = `account_id = ? AND ${where}${afterId === undefined ? '' : ' AND id > ?'}`;
    const order = afterId === undefined ? 'created_at' : 'id';
    const rows =
      limit === undefined
        ? this.dynamicStmt(`DELETE FROM messages WHERE ${scoped} RETURNING *`).all(
            accountId,
            ...params,
            ...after,
          )
        : this.dynamicStmt(
            'DELETE FROM messages WHERE rowid IN (SELECT rowid FROM messages ' +
              `WHERE ${scoped} ORDER BY ${order} LIMIT ?) RETURNING *`,
          ).all(accountId, ...params, ...after, limit);
    const gates = new Set<number>();
    for (const row of rows as (MessageRow & { gate_id: number | null })[]) {
      this.leases.delete(row.id);
      if (row.gate_id !== null) gates.add(row.gate_id);
    }
    this.flowGates.touch(gates);
    // The deleted rows' shared bodies are still stored: the pruner deletes them later.
    return this.withBodies(rows as MessageRow[])
      .map(messageFromRow)
      .sort(byCreatedAt);
  }

  // ---- events -----------------------------------------------------------------------------

  eventInsertMany({ events }: EventInsertManyParams): void {
    if (events.length === 0) return;
    this.inTransaction(() => {
      this.bodies.store(bodiesToStore(events.map((e) => e.body)));
      const insert = this.stmt(INSERT_EVENT);
      for (const event of events) insert.run(...eventParams(event));
    });
  }

  /**
   * Newest first; the cursor is the last returned event's id. A row stands for one event, or two
   * when it carries its attempt's ACTIVE event (`active_at`, migration 013): the listed ids are
   * `2 × id + 1` for a row's own event and `2 × id` for the ACTIVE it carries, so that ACTIVE comes
   * just before its outcome. The page is chosen from the two parts (each newest first through
   * `events_account_id`, at most a page each, the filter applied to each part's state and time),
   * then joined back to its rows. header/body are stored on the CREATED event only; the other
   * events take them from it. The correlated subqueries sit in the select list, so they run only
   * for the rows returned, and not at all for a CREATED row (which has its own: a lookup of it
   * would read the columns behind its body once more). Bodies are cut in SQL (`substr`), with
   * their whole `length` beside them.
   */
  eventList({ accountId, filter, cursor, count, bodyCut }: EventListParams): Page<EventRecord> {
    const own = filterSql(filter, EVENT_FILTER);
    const active = filterSql(filter, ACTIVE_EVENT_FILTER);
    const before = cursor === undefined ? undefined : parseEventCursor(cursor);
    const bound = before === undefined ? '' : ' AND id < ?';
    const fromCreated = (expr: string): string =>
      `(SELECT ${expr} FROM events c WHERE e.state <> 'CREATED' AND ` +
      `c.message_id = e.message_id AND c.state = 'CREATED' AND c.account_id = e.account_id LIMIT 1)`;
    const created = (column: string): string =>
      `COALESCE(e.${column}, ${fromCreated(`c.${column}`)}) AS ${column}`;
    /** An outcome column: NULL for the ACTIVE event a row carries (an even id). */
    const outcome = (expr: string, as: string): string =>
      `CASE WHEN p.vid % 2 = 1 THEN ${expr} END AS ${as}`;
    const sql =
      'WITH p AS (SELECT * FROM (SELECT id AS rid, 2 * id + 1 AS vid, state AS vstate, time AS vtime FROM events ' +
      `WHERE account_id = ? AND ${own.where}${bound} ORDER BY rid DESC LIMIT ?) UNION ALL ` +
      "SELECT * FROM (SELECT id AS rid, 2 * id AS vid, 'ACTIVE' AS vstate, active_at AS vtime " +
      `FROM events WHERE account_id = ? AND active_at IS NOT NULL AND ${active.where}${bound} ` +
      'ORDER BY rid DESC LIMIT ?) ORDER BY vid DESC LIMIT ?) ' +
      'SELECT p.vid AS id, e.account_id, e.message_id, p.vtime AS time, p.vstate AS state, e.url, e.method, e.topic_name, ' +
      'e.endpoint_name, e.queue_name, e.schedule_id, e.labels, e.flow_control_key, e.caller_ip, ' +
      `e.retried, e.max_retries, ${outcome('e.error', 'error')}, ` +
      `${outcome('e.next_delivery_time', 'next_delivery_time')}, ` +
      `${outcome('e.response_status', 'response_status')}, ` +
      `${outcome('e.response_header', 'response_header')}, ` +
      `${outcome('ifnull(substr(e.response_body, 1, ?), e.response_body)', 'response_body')}, ` +
      `${outcome('length(e.response_body)', 'response_body_size')}, ${created('header')}, ` +
      `COALESCE(substr(e.body, 1, ?), e.body, ` +
      `${fromCreated('ifnull(substr(c.body, 1, ?), c.body)')}) AS body, ` +
      `COALESCE(length(e.body), ${fromCreated('length(c.body)')}) AS body_size, ` +
      `${created('body_redacted')}, ${created('body_id')} ` +
      'FROM p JOIN events e ON e.id = p.rid ORDER BY p.vid DESC';
    const cut = bodyCut ?? WHOLE;
    const limit = count + 1;
    const bounds = before === undefined ? undefined : eventPartBounds(before);
    const ownBound = bounds ? [bounds.own] : [];
    const activeBound = bounds ? [bounds.active] : [];
    const args = [
      ...[accountId, ...own.params, ...ownBound, limit],
      ...[accountId, ...active.params, ...activeBound, limit],
      limit,
      cut,
      cut,
      cut,
    ];
    const rows = this.dynamicStmt(sql).all(...args) as EventRow[];
    return page(this.withBodies(rows, bodyCut).map(eventFromRow), count, (event) =>
      String(event.id),
    );
  }

  eventDeleteBefore({ before, limit }: EventDeleteBeforeParams): number {
    return this.stmt(
      'DELETE FROM events WHERE rowid IN (SELECT rowid FROM events WHERE time < ? LIMIT ?)',
    ).run(before, limit).changes;
  }

  // ---- dlq --------------------------------------------------------------------------------

  dlqInsertMany({ entries }: DlqInsertManyParams): void {
    if (entries.length === 0) return;
    this.inTransaction(() => {
      this.bodies.store(bodiesToStore(entries.map((d) => d.message.body)));
      const insert = this.stmt(INSERT_DLQ);
      for (const entry of entries) insert.run(...dlqParams(entry));
    });
  }

  dlqGet({ accountId, dlqId }: DlqGetParams): DlqEntry | undefined {
    const row = this.stmt('SELECT * FROM dlq WHERE dlq_id = ? AND account_id = ?').get(
      dlqId,
      accountId,
    );
    if (row === undefined) return undefined;
    const [whole] = this.withBodies([row as DlqRow]);
    return whole && dlqFromRow(whole);
  }

  /**
   * Newest first by dlq id (dlq ids begin with their creation time); the cursor is the last id.
   * Bodies are cut in SQL (`substr`), with their whole `length` beside them.
   */
  dlqList({ accountId, filter, cursor, count, bodyCut }: DlqListParams): Page<DlqEntry> {
    const { where, params } = filterSql(filter, DLQ_FILTER);
    const sql =
      'SELECT dlq_id, created_at, expires_at, response_status, response_header, error, message, ' +
      `${CUT_RESPONSE_BODY}, ifnull(substr(body, 1, ?), body) AS body, length(body) AS body_size, ` +
      'body_id ' +
      `FROM dlq WHERE account_id = ? AND ${where}` +
      (cursor === undefined ? '' : ' AND dlq_id < ?') +
      ' ORDER BY dlq_id DESC LIMIT ?';
    const cut = bodyCut ?? WHOLE;
    const args = [cut, cut, accountId, ...params];
    if (cursor !== undefined) args.push(cursor);
    const rows = this.dynamicStmt(sql).all(...args, count + 1) as DlqRow[];
    return page(this.withBodies(rows, bodyCut).map(dlqFromRow), count, (entry) => entry.dlqId);
  }

  dlqDeleteMany({ accountId, dlqIds }: DlqDeleteManyParams): number {
    if (dlqIds.length === 0) return 0;
    return this.inTransaction(() => {
      const remove = this.stmt('DELETE FROM dlq WHERE dlq_id = ? AND account_id = ?');
      let deleted = 0;
      for (const dlqId of dlqIds) deleted += remove.run(dlqId, accountId).changes;
      return deleted;
    });
  }

  dlqDeleteExpired({ now, limit }: DlqDeleteExpiredParams): number {
    return this.stmt(
      'DELETE FROM dlq WHERE rowid IN (SELECT rowid FROM dlq WHERE expires_at <= ? LIMIT ?)',
    ).run(now, limit).changes;
  }

  // ---- dedup ------------------------------------------------------------------------------

  /**
   * One upsert takes a free or expired key; when it changes nothing, an unexpired owner holds
   * the key and the select reads it. Both run in one transaction, so no other writer can change
   * the row in between (PostgreSQL does the same with `ON CONFLICT … DO UPDATE … WHERE`).
   */
  dedupClaim({ accountId, key, messageId, now, expiresAt }: DedupClaimParams): DedupClaimResult {
    return this.inTransaction(() => {
      const taken = this.stmt(
        'INSERT INTO dedup (account_id, key, message_id, expires_at) VALUES (?, ?, ?, ?) ' +
          'ON CONFLICT (account_id, key) DO UPDATE SET message_id = excluded.message_id, ' +
          'expires_at = excluded.expires_at WHERE dedup.expires_at <= ?',
      ).run(accountId, key, messageId, expiresAt, now).changes;
      if (taken > 0) return { messageId, duplicate: false };
      const owner = this.stmt('SELECT message_id FROM dedup WHERE account_id = ? AND key = ?').get(
        accountId,
        key,
      ) as { message_id: string };
      return { messageId: owner.message_id, duplicate: true };
    });
  }

  dedupDeleteExpired({ now, limit }: DedupDeleteExpiredParams): number {
    return this.stmt(
      'DELETE FROM dedup WHERE rowid IN (SELECT rowid FROM dedup WHERE expires_at <= ? LIMIT ?)',
    ).run(now, limit).changes;
  }

  // ---- helpers ----------------------------------------------------------------------------

  /**
   * Applies `sql` once per lease (fenced by its token); returns the ids it changed. `sql`
   * returns `gate_id`: the gate whose slot the row stopped holding, which is made ready.
   */
  private fenced<L extends Lease>(
    leases: L[],
    sql: string,
    args: (lease: L) => unknown[],
  ): string[] {
    const held = leases.filter((l) => this.leases.holds(l.id, l.leaseToken));
    if (held.length === 0) return [];
    return this.inTransaction(() => {
      const statement = this.stmt(sql);
      const rows: [string, number | null][] = [];
      for (const lease of held) {
        const row = statement.get(...args(lease)) as { gate_id: number | null } | undefined;
        if (row) rows.push([lease.id, row.gate_id]);
      }
      return this.endFenced(held, rows);
    });
  }

  /**
   * After a fenced operation changed `rows` (id, gate id): their gates are touched, every held
   * lease ends (an extension is handled without SQL), and the ids changed are returned in the
   * order of `held`.
   */
  private endFenced(held: Lease[], rows: [string, number | null][]): string[] {
    let gates: Set<number> | undefined;
    const changed = new Set<string>();
    for (const [id, gate] of rows) {
      changed.add(id);
      if (gate !== null) (gates ??= new Set()).add(gate);
    }
    if (gates) this.flowGates.touch(gates);
    for (const lease of held) this.leases.delete(lease.id);
    // `delete` is true once per id: a lease given twice is counted once, as the row was.
    return held.filter((l) => changed.delete(l.id)).map((l) => l.id);
  }

  /**
   * Puts the shared bodies into rows read without them (see `fillBodies`): whole when `cut` is
   * undefined, else cut like the lists' inline bodies.
   */
  withBodies<R extends { body_id?: string | null; body: Buffer | null }>(
    rows: R[],
    cut?: number,
  ): R[] {
    const ids = bodyIdsOf(rows);
    return ids.length === 0 ? rows : fillBodies(rows, cut, this.bodies.load(ids, cut));
  }

  /**
   * The rows in one of `states` at `now`, as `messageStateOf` tells them: the live leases are in
   * memory, so they go in as one JSON array parameter.
   */
  private stateSql(states: MessageState[], now: number): { where: string; params: unknown[] } {
    const leased = 'id IN (SELECT value FROM json_each(?))';
    const leases = JSON.stringify([...this.leases.liveIds(now)]);
    const parts: { where: string; params: unknown[] }[] = [];
    for (const state of new Set(states)) {
      if (state === 'waiting') parts.push({ where: 'wait_due_at IS NOT NULL', params: [] });
      else if (state === 'active') {
        parts.push({ where: `(wait_due_at IS NULL AND ${leased})`, params: [leases] });
      } else {
        const due = state === 'delayed' ? 'due_at > ?' : 'due_at <= ?';
        parts.push({
          where: `(wait_due_at IS NULL AND NOT ${leased} AND ${due})`,
          params: [leases, now],
        });
      }
    }
    if (parts.length === 0) return { where: 'FALSE', params: [] };
    return {
      where: `(${parts.map((p) => p.where).join(' OR ')})`,
      params: parts.flatMap((p) => p.params),
    };
  }

  /**
   * A message read for the API, with its state at `now`. A leased message's `dueAt` is its lease
   * expiry, as with a lease kept in the row.
   */
  private listed(row: MessageRow, now: number): ListedMessage & { state: MessageState } {
    const message = messageFromRow(row);
    const lease = this.leases.get(message.id);
    const state = messageStateOf(row, now, lease?.until ?? 0);
    return { message: lease ? { ...message, dueAt: lease.until } : message, state };
  }
}

function filterSql(
  filter: RecordFilter,
  columns: FilterColumns,
): { where: string; params: unknown[] } {
  const params: unknown[] = [];
  const where = buildFilter(filter, columns, (value) => {
    params.push(value);
    return '?';
  });
  return { where: `(${where})`, params };
}

/** `rows` holds up to `count + 1` items; the extra one only says that another page exists. */
function page<T>(rows: T[], count: number, cursorOf: (last: T) => string): Page<T> {
  if (rows.length <= count) return { items: rows };
  const items = rows.slice(0, count);
  const last = items[items.length - 1];
  return last === undefined ? { items } : { items, cursor: cursorOf(last) };
}

function parseEventCursor(cursor: string): number {
  if (!/^\d{1,15}$/.test(cursor)) throw badRequest(`invalid cursor: ${cursor}`);
  return Number(cursor);
}
