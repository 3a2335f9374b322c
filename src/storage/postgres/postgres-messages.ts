/** Operations on the hot `messages` table. */
import type { ClaimedMessage, EventRecord, Message } from '../../core/types.js';
import type {
  Lease,
  MessageClaimDueLimitedParams,
  MessageClaimDueLimitedResult,
  MessageClaimDueParams,
  MessageDeleteLeasedManyParams,
  MessageDeleteManyParams,
  MessageFinishManyParams,
  MessageGetParams,
  MessageViewParams,
  MessageState,
  MessageLeaseExtendManyParams,
  MessageReleaseManyParams,
  MessageRetryManyParams,
  MessageSpreadDueParams,
} from '../driver.js';
import { ORIGIN_SKIP_SCAN } from '../driver.js';
import { buildFilter, joinLabels, MESSAGE_FILTER, originParts, urlParts } from '../sql/filter.js';
import { batchInsert } from './postgres-batch.js';
import { newBinder } from './postgres-bind.js';
import { type Db, toClaimedMessage } from './postgres-rows.js';
import { type MessageRow, messageFromRow, messageStateOf } from '../sql/rows.js';
import { PARKED_DUE_AT } from '../../core/flow-control.js';
import { type GatedMessage, gatedDueAt, touchGates } from './postgres-flow-gates.js';
import type {
  ListedMessage,
  MessageCountInFlightParams,
  MessageListParams,
  Page,
} from '../driver.js';
import type { Column, RowFilter } from './postgres-batch.js';
import { inlineBody, sharedBodyId } from '../sql/bodies.js';
import { withBodies } from './postgres-bodies.js';
import { insertEvents } from './postgres-events.js';

const MESSAGE_COLUMNS: Column<Message>[] = [
  { name: 'id', type: 'text', value: (m) => m.id },
  { name: 'account_id', type: 'text', value: (m) => m.accountId },
  { name: 'url', type: 'text', value: (m) => m.url },
  { name: 'url_host', type: 'text', value: (m) => urlParts(m.url).host },
  { name: 'url_path', type: 'text', value: (m) => urlParts(m.url).path },
  { name: 'topic_name', type: 'text', value: (m) => m.topicName },
  { name: 'endpoint_name', type: 'text', value: (m) => m.endpointName },
  { name: 'queue_name', type: 'text', value: (m) => m.queueName },
  { name: 'schedule_id', type: 'text', value: (m) => m.scheduleId },
  { name: 'labels', type: 'text', value: (m) => joinLabels(m.spec.labels) },
  { name: 'flow_control_key', type: 'text', value: (m) => m.spec.flowControl?.key },
  { name: 'caller_ip', type: 'text', value: (m) => m.callerIp },
  { name: 'retried', type: 'integer', value: (m) => m.retried },
  { name: 'max_retries', type: 'integer', value: (m) => m.maxRetries },
  { name: 'not_before', type: 'bigint', value: (m) => m.notBefore },
  { name: 'created_at', type: 'bigint', value: (m) => m.createdAt },
  { name: 'due_at', type: 'bigint', value: (m) => m.dueAt },
  { name: 'spec', type: 'text', value: (m) => JSON.stringify(m.spec) },
  { name: 'body', type: 'bytea', value: (m) => inlineBody(m.body) },
  { name: 'body_id', type: 'text', value: (m) => sharedBodyId(m.body) },
  // A message stored leased to its publisher's engine (Engine.reserve), due at the lease's end.
  { name: 'lease_token', type: 'text', value: (m) => (m as Partial<ClaimedMessage>).leaseToken },
  // Its workflow run, for the logs (migration 018); left out of a plain message's JSON row.
  { name: 'workflow_run_id', type: 'text', value: (m) => m.spec.workflow?.runId },
];

export const insertMessages = batchInsert<Message>('messages', MESSAGE_COLUMNS);

/** The one-statement publish with messages given leased (see publishLeased), built once. */
let publishLeasedText: string | undefined;
function leasedText(): string {
  if (publishLeasedText !== undefined) return publishLeasedText;
  // A row given leased keeps its lease only within its account's free slots (`ok`); else it is
  // due from its creation, for a claim to take.
  const ok =
    'r.lease_token IS NOT NULL AND (s.account_id IS NULL OR ' +
    '(s.taken IS NOT NULL AND r.n <= s.max - s.taken))';
  // The messages' parameters, then the events', then the limits' (now, the lock class, plans,
  // their maxima, the wait).
  const events = 1 + insertMessages.width;
  const [now, lockClass, plans, maxima, wait] = Array.from(
    { length: 5 },
    (_, i) => `$${events + insertEvents.width + i}`,
  );
  const values = insertMessages.values(1).map((value, i) => {
    const name = MESSAGE_COLUMNS[i]?.name;
    if (name === 'due_at') return `CASE WHEN ${ok} THEN r.due_at ELSE r.created_at END`;
    if (name === 'lease_token') return `CASE WHEN ${ok} THEN r.lease_token END`;
    return value;
  });
  publishLeasedText =
    `WITH m AS (SELECT * FROM ${insertMessages.source(1)}), ` +
    'slots AS (SELECT a.account_id, lim.max, ' +
    `ferry_leased_count_wait_locked(a.account_id, ${now}, ${lockClass}, ${wait}) AS taken ` +
    'FROM (SELECT DISTINCT account_id FROM m WHERE lease_token IS NOT NULL) a ' +
    'JOIN accounts ac ON ac.id = a.account_id ' +
    `JOIN unnest(${plans}::text[], ${maxima}::integer[]) AS lim(plan, max) ON lim.plan = ac.plan), ` +
    `stored AS (INSERT INTO messages (${MESSAGE_COLUMNS.map((c) => c.name).join(', ')}) ` +
    `SELECT ${values.join(', ')} FROM (SELECT m.*, row_number() OVER ` +
    '(PARTITION BY m.account_id, m.lease_token IS NOT NULL ORDER BY m.ord) AS n FROM m) r ' +
    'LEFT JOIN slots s ON s.account_id = r.account_id ORDER BY r.ord ' +
    'RETURNING id, lease_token IS NOT NULL AS leased), ' +
    `logged AS (${insertEvents.text(events)}) ` +
    'SELECT array(SELECT id FROM stored WHERE leased) AS ids';
  return publishLeasedText;
}

/**
 * Publishes plain messages and their events in one statement, where some messages are given
 * leased to the publishing node's engine (`ClaimedMessage`): each keeps its lease only within
 * its account's `max_global_parallelism`, counted as the claim counts (every node's leases, under
 * the claim's advisory lock, with a snapshot from after it), and in publish order among the
 * statement's own; an account without a limit is not counted. When another transaction holds
 * the lock longer than `waitMs` (whole ms, at least 1), the publish waits no more: its messages are stored unleased.
 * A message stored unleased is due from its creation. Returns the ids stored leased.
 */
export async function publishLeased(
  db: Db,
  messages: readonly Message[],
  events: readonly EventRecord[],
  limits: { now: number; maxInFlightByPlan: Record<string, number> },
  waitMs: number,
): Promise<string[]> {
  const limited = Object.entries(limits.maxInFlightByPlan).filter(([, max]) => max > 0);
  const [row] = await db.unsafe<{ ids: string[] }[]>(
    leasedText(),
    [
      ...insertMessages.params(messages),
      ...insertEvents.params(events),
      limits.now,
      CLAIM_LOCK_CLASS,
      limited.map(([plan]) => plan),
      limited.map(([, max]) => max),
      waitMs,
    ],
    { prepare: true },
  );
  return row?.ids ?? [];
}

/**
 * Gated messages: the gate columns too, and `seq`, the publish order within a gate, drawn from
 * the sequence row by row in input order.
 */
export const insertGatedMessages = batchInsert<GatedMessage>(
  'messages',
  [
    ...MESSAGE_COLUMNS.map((c) =>
      c.name === 'due_at'
        ? { ...c, value: gatedDueAt }
        : { ...c, value: (g: GatedMessage) => c.value(g.message) },
    ),
    { name: 'gate_id', type: 'bigint', value: (g) => g.gateId },
    { name: 'gate_mode', type: 'text', value: (g) => g.gateMode },
    { name: 'wait_due_at', type: 'bigint', value: (g) => g.waitDueAt },
  ],
  [{ name: 'seq', sql: "nextval('messages_seq')" }],
);

async function messageRow(db: Db, p: MessageGetParams): Promise<MessageRow | undefined> {
  const [row] = await db<MessageRow[]>`
    SELECT * FROM messages WHERE account_id = ${p.accountId} AND id = ${p.id}`;
  if (!row) return undefined;
  const [whole] = await withBodies(db, [row]);
  return whole;
}

export async function messageGet(db: Db, p: MessageGetParams): Promise<Message | undefined> {
  const row = await messageRow(db, p);
  return row && messageFromRow(row);
}

export async function messageView(
  db: Db,
  p: MessageViewParams,
): Promise<(ListedMessage & { state: MessageState }) | undefined> {
  const row = await messageRow(db, p);
  return row && { message: messageFromRow(row), state: messageStateOf(row, p.now) };
}

/**
 * The rows in one of `states` at `now` (bound when a state needs it: an unused parameter has no
 * type), as `messageStateOf` tells them: a live lease has a token and `due_at` at its expiry.
 */
function stateSql(states: MessageState[], bindNow: () => string): string {
  const wanted = [...new Set(states)];
  if (wanted.length === 0) return 'FALSE';
  const now = wanted.every((s) => s === 'waiting') ? '0' : bindNow();
  const leased = `(lease_token IS NOT NULL AND due_at > ${now})`;
  const parts = wanted.map((state) => {
    if (state === 'waiting') return 'wait_due_at IS NOT NULL';
    if (state === 'active') return `(wait_due_at IS NULL AND ${leased})`;
    const due = state === 'delayed' ? `due_at > ${now}` : `due_at <= ${now}`;
    return `(wait_due_at IS NULL AND NOT ${leased} AND ${due})`;
  });
  return `(${parts.join(' OR ')})`;
}

/** Like `dlqList`: bodies cut in SQL, newest first by id, the cursor is the last id. */
export async function messageList(db: Db, p: MessageListParams): Promise<Page<ListedMessage>> {
  if (p.count <= 0) return { items: [] };
  const { bind, params } = newBinder();
  const where = [`account_id = ${bind(p.accountId)}`, buildFilter(p.filter, MESSAGE_FILTER, bind)];
  if (p.cursor !== undefined) where.push(`id < ${bind(p.cursor)}`);
  if (p.states !== undefined) where.push(stateSql(p.states, () => bind(p.now ?? 0)));
  const cut = bind(p.bodyCut ?? 2_147_483_647);
  const text = `SELECT id, account_id, url, url_host, url_path, topic_name, endpoint_name,
      queue_name, schedule_id, labels, flow_control_key, caller_ip, retried, max_retries,
      not_before, created_at, due_at, lease_token, spec, wait_due_at, body_id,
      substring(body from 1 for ${cut}) AS body, octet_length(body) AS body_size
    FROM messages WHERE ${where.join(' AND ')}
    ORDER BY id DESC LIMIT ${bind(p.count + 1)}`;
  // Not prepared: the text varies with the filter.
  const rows = await db.unsafe<(MessageRow & { body_size: number })[]>(text, params);
  const read = await withBodies(db, rows.slice(0, p.count), p.bodyCut ?? 2_147_483_647);
  const items = read.map((row) => ({
    message: messageFromRow(row),
    ...(p.now === undefined ? {} : { state: messageStateOf(row, p.now) }),
    ...(row.body.length < Number(row.body_size) ? { bodySize: Number(row.body_size) } : {}),
  }));
  const last = items[items.length - 1];
  return rows.length > p.count && last ? { items, cursor: last.message.id } : { items };
}

/**
 * Unlike SQLite (one writer connection, so a plain `UPDATE … WHERE id IN (SELECT … LIMIT ?)` is
 * already exclusive), PostgreSQL needs `FOR UPDATE SKIP LOCKED` so that concurrent claimers on
 * other connections or nodes never take the same row: each skips rows another has locked.
 *
 * Tokens come from `gen_random_uuid()` (built in since PostgreSQL 13, from the strong random
 * source): volatile, so evaluated once per row, hence distinct per row and per claim.
 */
export async function messageClaimDue(db: Db, p: MessageClaimDueParams): Promise<ClaimedMessage[]> {
  if (p.limit <= 0) return [];
  const rows = await db<MessageRow[]>`
    WITH c AS (
      SELECT id, due_at FROM messages
      WHERE due_at <= ${p.now}
      ORDER BY due_at
      LIMIT ${p.limit}
      FOR UPDATE SKIP LOCKED
    ), claimed AS (
      UPDATE messages m
      SET due_at = ${p.leaseUntil}, lease_token = gen_random_uuid()::text
      FROM c
      WHERE m.id = c.id
      RETURNING m.*, c.due_at AS claimed_due_at
    )
    SELECT * FROM claimed ORDER BY claimed_due_at, id`;
  return (await withBodies(db, rows)).map(toClaimedMessage);
}

/**
 * First key of the advisory lock that serializes limited claims; the second is a hash of the
 * schema, so deployments (and test runs) sharing a database do not wait for each other. The
 * two-key form never collides with the migration lock (one key); schedules use another class.
 */
export const CLAIM_LOCK_CLASS = 0x46436c6d; // "FClm"

type LimitedClaimRow = MessageRow & {
  at_limit: string[] | null;
  gates_ready: boolean;
  next_due_at: string | null;
};

/**
 * A select-list column that makes the statement, when it is its own transaction, commit as
 * `SET LOCAL synchronous_commit = off` would in one: not waiting for the WAL flush.
 */
const RELAXED_COMMIT = `(SELECT set_config('synchronous_commit', 'off', true)) AS relaxed, `;

/**
 * The claim's statement, built once per form: its text is a few KB, which building for every
 * claim made garbage for the young generation's collections to sweep.
 */
const claimTexts = new Map<boolean, string>();
function claimText(relaxed: boolean): string {
  let text = claimTexts.get(relaxed);
  if (text !== undefined) return text;
  const off = relaxed ? RELAXED_COMMIT : '';
  text = `WITH c AS (
        (SELECT tid, id, account_id, due_at FROM (
          SELECT ctid AS tid, id, account_id, due_at, url_host, url FROM messages
          WHERE due_at <= $1 ORDER BY due_at LIMIT $2) s
        WHERE lower(split_part(s.url, '//', 1)) || '//' || s.url_host <> ALL ($3::text[])
        LIMIT $4)
        UNION ALL
        SELECT x.* FROM unnest($3::text[], $5::integer[]) AS r(origin, room)
        CROSS JOIN LATERAL (
          SELECT tid, id, account_id, due_at FROM (
            SELECT ctid AS tid, id, account_id, due_at, url_host, url FROM messages
            WHERE due_at <= $1 ORDER BY due_at LIMIT $2) s
          WHERE lower(split_part(s.url, '//', 1)) || '//' || s.url_host = r.origin
          LIMIT r.room) x
        WHERE r.room > 0
      ), fit AS (
        SELECT * FROM c ORDER BY due_at, id LIMIT $4
      ), slots AS (
        SELECT a.account_id,
          lim.max - ferry_leased_count_locked(a.account_id, $1, $6) AS free
        FROM (SELECT DISTINCT account_id FROM fit) a
          JOIN accounts ac ON ac.id = a.account_id
          JOIN unnest($7::text[], $8::integer[]) AS lim(plan, max) ON lim.plan = ac.plan
      ), ranked AS (
        SELECT fit.tid, fit.id, fit.account_id, s.free,
          row_number() OVER (PARTITION BY fit.account_id ORDER BY fit.due_at, fit.id) AS n
        FROM fit LEFT JOIN slots s ON s.account_id = fit.account_id
      ), picked AS (
        SELECT m.ctid AS tid, m.due_at FROM messages m JOIN ranked r ON m.ctid = r.tid
        WHERE (r.free IS NULL OR r.n <= r.free) AND m.id = r.id AND m.due_at <= $1
        FOR UPDATE OF m SKIP LOCKED
      ), claimed AS (
        UPDATE messages m
        SET due_at = $9, lease_token = gen_random_uuid()::text
        FROM picked
        WHERE m.ctid = picked.tid
        RETURNING m.*, picked.due_at AS claimed_due_at
      )
      SELECT ${off}w.at_limit,
        EXISTS (SELECT 1 FROM flow_gates WHERE ready_at <= $1) AS gates_ready,
        LEAST(
          (SELECT min(due_at) FROM messages WHERE due_at > $1 AND due_at < $10),
          (SELECT min(ready_at) FROM flow_gates WHERE ready_at IS NOT NULL),
          (SELECT min(due_at) FROM claimed)) AS next_due_at,
        claimed.*
      FROM (SELECT array_agg(DISTINCT account_id) AS at_limit FROM ranked WHERE n > free) w
        LEFT JOIN claimed ON true
      ORDER BY claimed.claimed_due_at, claimed.id`;
  claimTexts.set(relaxed, text);
  return text;
}

/**
 * The engine's claim under max_global_parallelism, exact across nodes, as one statement.
 *
 * Unlike SQLite (one process, so the engine counts deliveries per account in memory), every node
 * claims here, and each would count only its own. So the claim counts in the database: for each
 * account among the `limit` earliest due messages, its leased, unexpired messages (a short range
 * of the `messages_leased` partial index: what all nodes have in flight; migration 009), and it
 * takes per account at most the free slots, earliest first (a window over the candidates).
 *
 * Two claims counting at once would both see the same free slots, so limited claims run one at a
 * time: the count (`ferry_leased_count_locked`, migration 012) first takes a transaction-scoped
 * advisory lock, then counts with a snapshot taken after it, so it sees every lease committed by
 * the claim before. The lock is held until the claim's transaction ends: outside a transaction
 * the statement is its own, and ends with it. Claims of different nodes therefore run one after
 * the other, a few milliseconds each, while SKIP LOCKED still keeps them clear of rows locked by
 * other writers (cancel, outcomes). An account without a limit is not counted, and a claim with
 * no such account takes no lock.
 *
 * The candidates are read without a lock (with the statement's snapshot, which may predate a
 * claim that committed while this one waited for the lock) and only the picked rows are locked:
 * messages of an account at its limit stay untouched (no row lock written) however often the
 * engine asks. The picked rows are found again by `ctid` (a direct heap fetch, where a join on
 * `id` would descend the primary key once more per row). A picked row that changed since the
 * candidates were read is re-checked by FOR UPDATE (the same `id`, due again) or skipped; one
 * locked in its newer version is then not visible to the UPDATE and stays unclaimed: never too
 * many. An account without a plan in `maxInFlightByPlan` (or without an accounts row) has no
 * limit.
 *
 * Per-origin rooms (`originRooms`, the engine's congested origins): the candidates are, in due
 * order, the rows of origins without a room (read past the limited origins' rows, at most
 * `limit` + ORIGIN_SKIP_SCAN rows in all), and of each limited origin its `room` earliest rows;
 * the `limit` earliest candidates go on to the account limit. Each part is a scan of the due
 * index that stops as soon as it has its rows: the filters are plain expressions on the scanned
 * rows (an anti-join would read every due row first), and the two parts repeat the bounded read
 * of the due rows instead of sharing a CTE (PostgreSQL would materialize a CTE read twice, all
 * `limit` + ORIGIN_SKIP_SCAN rows of it). A row's origin is its scheme, `//` and
 * `url_host`, as `new URL(url).origin` spells it.
 *
 * The same statement tells whether a flow-control gate is ready (`gatesReady`) and the next due
 * time after `now`, as a read after the commit would find it (the statement's snapshot
 * still has the claimed rows due, so their lease expiry comes from its RETURNING), and, on the
 * pool, commits as `synchronous_commit = off` would (a claim lost to a server crash only makes
 * its messages due again), so the engine's usual claim is one statement without BEGIN, `SET
 * LOCAL` and COMMIT.
 */
export async function messageClaimDueLimited(
  db: Db,
  p: MessageClaimDueLimitedParams,
  relaxed = false,
): Promise<MessageClaimDueLimitedResult> {
  const limited = Object.entries(p.maxInFlightByPlan).filter(([, max]) => max > 0);
  const rooms = p.originRooms ?? [];
  const origins = rooms.map((r) => r.origin);
  const scan = Math.max(0, p.limit) + ORIGIN_SKIP_SCAN;
  const rows = await db.unsafe<LimitedClaimRow[]>(
    claimText(relaxed),
    [
      p.now,
      scan,
      origins,
      Math.max(0, p.limit),
      rooms.map((r) => r.room),
      CLAIM_LOCK_CLASS,
      limited.map(([plan]) => plan),
      limited.map(([, max]) => max),
      p.leaseUntil,
      PARKED_DUE_AT,
    ],
    { prepare: true },
  );
  const claimed = await withBodies(
    db,
    rows.filter((row) => row.id !== null),
  );
  return {
    messages: claimed.map(toClaimedMessage),
    atLimit: rows[0]?.at_limit ?? [],
    gatesReady: rows[0]?.gates_ready === true,
    nextDueAt: rows[0]?.next_due_at == null ? undefined : Number(rows[0].next_due_at),
  };
}

/** Rows a fenced write returns: `gate_id` names a gate whose slot the row stopped holding. */
type FencedRow = { id: string; gate_id: string | null };

/** Makes the gates of `rows` ready (their holders ended), then returns the applied ids. */
async function released(db: Db, leases: readonly Lease[], rows: readonly FencedRow[]) {
  const gates = rows.flatMap((r) => (r.gate_id === null ? [] : [String(r.gate_id)]));
  await touchGates(db, gates);
  return appliedIds(leases, rows);
}

/** The count the claim's limit applies to (see migration 009 for why it is a function). */
export async function messageCountInFlight(db: Db, p: MessageCountInFlightParams): Promise<number> {
  const [row] = await db<{ n: number }[]>`
    SELECT ferry_leased_count(${p.accountId}, ${p.now})::int AS n`;
  return row?.n ?? 0;
}

/** The ids of `leases` that are in `applied`, in input order, each once. */
function appliedIds(leases: readonly Lease[], rows: readonly { id: string }[]): string[] {
  const applied = new Set(rows.map((row) => row.id));
  const ids: string[] = [];
  for (const lease of leases) {
    if (applied.delete(lease.id)) ids.push(lease.id);
  }
  return ids;
}

// The fenced operations below each run one statement for the whole batch: the leases travel as
// two parallel arrays, joined to the table on id AND token, so a lease that was lost (the row
// was reclaimed with a new token, or deleted) is simply not matched.

export async function messageLeaseExtendMany(
  db: Db,
  p: MessageLeaseExtendManyParams,
): Promise<string[]> {
  if (p.leases.length === 0) return [];
  // SKIP LOCKED: a row another transaction holds is being written by its outcome (or reclaimed),
  // so it needs no renewal now, and waiting for it deadlocked against the outcome writer, whose
  // batch locks the same rows in another order (found by `npm run chaos` on two nodes). A
  // skipped lease is not in the result; the next heartbeat renews it if it is still held.
  const rows = await db<{ id: string }[]>`
    WITH held AS (
      SELECT m.id FROM messages m
      JOIN unnest(${p.leases.map((l) => l.id)}::text[], ${p.leases.map((l) => l.leaseToken)}::text[])
        AS l(id, token) ON m.id = l.id AND m.lease_token = l.token
      FOR UPDATE OF m SKIP LOCKED
    )
    UPDATE messages m SET due_at = ${p.leaseUntil}
    FROM held WHERE m.id = held.id
    RETURNING m.id`;
  return appliedIds(p.leases, rows);
}

export async function messageDeleteLeasedMany(
  db: Db,
  p: MessageDeleteLeasedManyParams,
): Promise<string[]> {
  const leases = p.leases;
  if (leases.length === 0) return [];
  const rows = await db<FencedRow[]>`
    DELETE FROM messages m
    USING unnest(${leases.map((l) => l.id)}::text[], ${leases.map((l) => l.leaseToken)}::text[])
      AS l(id, token)
    WHERE m.id = l.id AND m.lease_token = l.token
    RETURNING m.id, m.gate_id`;
  return released(db, leases, rows);
}

/** An event of a finished message is written only if the message's lease held (its delete). */
const FINISHED: RowFilter = {
  name: 'finished',
  type: 'text',
  where: 'r.finished IS NULL OR r.finished IN (SELECT id FROM done)',
};

/** The statement of messageFinishUngated, built once per form (see claimText). */
const finishTexts = new Map<boolean, string>();
function finishText(relaxed: boolean): string {
  let text = finishTexts.get(relaxed);
  if (text !== undefined) return text;
  const log = insertEvents.text(3, FINISHED);
  const off = relaxed ? RELAXED_COMMIT : '';
  // The delete looks up each id in the primary key (`= ANY`) and checks each lease's token as
  // `id || ' ' || token` (ids hold no space). A join with the unnested leases instead let the
  // planner, with the table small when it planned, read messages first (see FIXED_POOL_SETTINGS).
  // The `coalesce` keeps the planner from reading the whole `messages_leased` index instead: a
  // strict expression of `lease_token` implies the index's `lease_token IS NOT NULL`, and with
  // few leases in the statistics that index looked cheapest, but it holds every lease in flight.
  text =
    `WITH done AS (DELETE FROM messages m WHERE m.id = ANY ($1::text[]) ` +
    `AND m.id || ' ' || coalesce(m.lease_token, '') = ANY ($2::text[]) ` +
    `AND m.gate_id IS NULL RETURNING m.id), ` +
    `logged AS (${log}) SELECT ${off}array(SELECT id FROM done) AS ids`;
  finishTexts.set(relaxed, text);
  return text;
}

/**
 * `messageFinishMany` as one statement, for leases of messages without a flow-control gate (a
 * gate holder's delete must also make its gate ready, which takes a lock first: see touchGates).
 * The DELETE's rows go to the events' insert as a filter: the events of a lease that did not
 * hold are not written. Returns the ids deleted; a lease not among them was lost or is gated.
 * Event bodies must be inline (see bodiesToStore). With `relaxed`, the statement (its own
 * transaction) commits without waiting for the WAL flush, as `SET LOCAL synchronous_commit =
 * off` would in a transaction; never inside a caller's transaction, whose durability is its own.
 */
export async function messageFinishUngated(
  db: Db,
  p: MessageFinishManyParams,
  /** `p.events`, then each finished message's, in order (the caller has them at hand). */
  events: readonly EventRecord[],
  relaxed: boolean,
): Promise<string[]> {
  const owners = [
    ...p.events.map(() => null),
    ...p.finished.flatMap((f) => f.events.map(() => f.lease.id)),
  ];
  const text = finishText(relaxed);
  const [row] = await db.unsafe<{ ids: string[] }[]>(
    text,
    [
      p.finished.map((f) => f.lease.id),
      p.finished.map((f) => `${f.lease.id} ${f.lease.leaseToken}`),
      ...insertEvents.params(events, { name: FINISHED.name, values: owners }),
    ],
    { prepare: true },
  );
  return appliedIds(
    p.finished.map((f) => f.lease),
    (row?.ids ?? []).map((id) => ({ id })),
  );
}

export async function messageRetryManyLeased(db: Db, p: MessageRetryManyParams): Promise<string[]> {
  const retries = p.retries;
  if (retries.length === 0) return [];
  // A flow-control key's message waits again for its retry (its slot was for one attempt).
  const rows = await db<FencedRow[]>`
    UPDATE messages m SET
      due_at = CASE WHEN m.gate_mode = 'key' THEN ${PARKED_DUE_AT} ELSE l.due_at END,
      wait_due_at = CASE WHEN m.gate_mode = 'key' THEN l.due_at END,
      retried = l.retried, lease_token = NULL
    FROM unnest(
      ${retries.map((r) => r.id)}::text[],
      ${retries.map((r) => r.leaseToken)}::text[],
      ${retries.map((r) => r.dueAt)}::bigint[],
      ${retries.map((r) => r.retried)}::integer[]
    ) AS l(id, token, due_at, retried)
    WHERE m.id = l.id AND m.lease_token = l.token
    RETURNING m.id, CASE WHEN m.gate_mode = 'key' THEN m.gate_id END AS gate_id`;
  return released(db, retries, rows);
}

export async function messageReleaseMany(db: Db, p: MessageReleaseManyParams): Promise<string[]> {
  if (p.leases.length === 0) return [];
  const rows = await db<{ id: string }[]>`
    UPDATE messages m SET due_at = ${p.dueAt}, lease_token = NULL
    FROM unnest(${p.leases.map((l) => l.id)}::text[], ${p.leases.map((l) => l.leaseToken)}::text[])
      AS l(id, token)
    WHERE m.id = l.id AND m.lease_token = l.token
    RETURNING m.id`;
  return appliedIds(p.leases, rows);
}

/**
 * One statement: the due range of the due index, filtered to the origin's unleased, ungated
 * rows, locked (SKIP LOCKED: a row being claimed or written elsewhere is left as it is) and
 * given due times one step apart in due order.
 */
export async function messageSpreadDue(
  db: Db,
  p: MessageSpreadDueParams,
): Promise<number | undefined> {
  const parts = originParts(p.origin);
  if (!parts || p.limit <= 0) return undefined;
  const [row] = await db<{ last: string | null }[]>`
    WITH c AS (
      SELECT ctid AS tid, due_at, seq FROM messages
      WHERE due_at <= ${p.now} AND url_host = ${parts.host}
        AND lower(substr(url, 1, ${parts.scheme.length})) = ${parts.scheme}
        AND lease_token IS NULL AND gate_id IS NULL
      ORDER BY due_at
      LIMIT ${p.limit}
      FOR UPDATE SKIP LOCKED
    ), r AS (
      SELECT tid, row_number() OVER (ORDER BY due_at, seq) - 1 AS n FROM c
    ), moved AS (
      UPDATE messages m
      SET due_at = ${p.from} + floor(r.n * ${p.stepMs}::float8 / ${p.tickMs})::bigint * ${p.tickMs}
      FROM r WHERE m.ctid = r.tid
      RETURNING m.due_at
    )
    SELECT max(due_at) AS last FROM moved`;
  return row?.last == null ? undefined : Number(row.last);
}

/** Bulk cancel: deletes the account's matching rows, leased or not; with `limit`, oldest first. */
export async function messageDeleteMany(db: Db, p: MessageDeleteManyParams): Promise<Message[]> {
  const { bind, params } = newBinder();
  let where =
    `account_id = ${bind(p.accountId)} AND ` + buildFilter(p.filter, MESSAGE_FILTER, bind);
  if (p.afterId !== undefined) where += ` AND id > ${bind(p.afterId)}`;
  const order = p.afterId === undefined ? 'created_at, id' : 'id';
  const text =
    p.limit === undefined
      ? `DELETE FROM messages WHERE ${where} RETURNING *`
      : `DELETE FROM messages WHERE id IN (
           SELECT id FROM messages WHERE ${where} ORDER BY ${order} LIMIT ${bind(p.limit)}
         ) RETURNING *`;
  // Not prepared: the text varies with the filter, and each variant would stay cached.
  const rows = await db.unsafe<(MessageRow & { gate_id: string | null })[]>(text, params);
  await touchGates(
    db,
    rows.flatMap((r) => (r.gate_id === null ? [] : [String(r.gate_id)])),
  );
  // The deleted rows' shared bodies are still stored: the pruner deletes them later.
  return (await withBodies(db, rows))
    .map(messageFromRow)
    .sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}
