/**
 * Flow-control keys and queues on PostgreSQL (see core/flow-control.ts).
 *
 * Unlike SQLite (one writer, so every admission is serialized anyway), many nodes admit at once
 * here: an admission locks the gate rows it works on (`FOR UPDATE SKIP LOCKED`, so nodes share
 * the ready gates instead of queueing on them), counts the slot holders and the rate under that
 * lock, and every change of holders (publish, release, cancel) updates the gate row in its own
 * transaction, so it waits for a running admission and makes the gate ready after it.
 * Gate rows are always locked in (account, kind, name) order, so two writers never deadlock on
 * them.
 */
import {
  type FlowGate,
  type GateRef,
  gateOf,
  nextReadyAt,
  PARKED_DUE_AT,
  planAdmission,
} from '../../core/flow-control.js';
import type { Message } from '../../core/types.js';
import type {
  FlowGateAdmitParams,
  FlowGateAdmitResult,
  FlowGateKeyParams,
  FlowGateListParams,
  FlowGateUpdateParams,
  QueueUpsertParams,
  QueueUpsertResult,
} from '../driver.js';
import {
  type FlowGateRow,
  flowGateFromRow,
  gateLimits,
  likeContains,
} from '../sql/flow-gate-rows.js';
import { atomically, type Db, transactional } from './postgres-rows.js';

/** Most messages one gate admits per round; a larger backlog continues in the next round. */
const MAX_ADMIT_PER_GATE = 500;

/** A message with the gate columns it is inserted with. */
export interface GatedMessage {
  message: Message;
  gateId: string;
  gateMode: string;
  waitDueAt: number | undefined;
}

const gateKey = (accountId: string, gate: Pick<GateRef, 'kind' | 'name'>): string =>
  `${accountId}\n${gate.kind}\n${gate.name}`;

/**
 * Creates or updates the gates of `messages` (one row per gate; the last message's limits win,
 * as if each were published in turn) and returns each gated message with its gate columns.
 *
 * A key's message that is due now starts at once when its gate admits it: nobody due waits
 * ahead of it, and a slot and the rate allow it (`waitDueAt` undefined: it is a holder from the
 * start, and counts toward the rate). That is what an admission round would do, without the
 * round. The counts are read after the upsert has locked the gate row, in a statement of their
 * own (a fresh snapshot): every admission, release and publish of the gate that committed before
 * is seen, and the ones after wait for this transaction. Every other waiting message parks and
 * makes its gate ready by its due time.
 */
export async function enterGates(
  db: Db,
  messages: readonly Message[],
): Promise<{ gated: GatedMessage[]; gateWrites: Promise<void> }> {
  interface Entry {
    message: Message;
    key: string;
    ref: GateRef;
    /** Set while the message waits; cleared when it starts at once. */
    waitDueAt?: number;
    /** A key's message due at publish: it may start at once. */
    atOnce: boolean;
  }
  const gates = new Map<
    string,
    { accountId: string; ref: GateRef; readyAt?: number; now: number }
  >();
  const entries: Entry[] = [];
  for (const message of messages) {
    const ref = gateOf(message);
    if (!ref) continue;
    const key = gateKey(message.accountId, ref);
    const waitDueAt = ref.mode === 'wait' ? message.dueAt : undefined;
    const atOnce = ref.kind === 'key' && waitDueAt !== undefined && waitDueAt <= message.createdAt;
    const previous = gates.get(key);
    // Only a message that surely waits makes the gate ready here; see parkAt below.
    const readyAt =
      waitDueAt === undefined || atOnce
        ? previous?.readyAt
        : Math.min(previous?.readyAt ?? waitDueAt, waitDueAt);
    gates.set(key, { accountId: message.accountId, ref, readyAt, now: message.createdAt });
    entries.push({ message, key, ref, waitDueAt, atOnce });
  }
  if (entries.length === 0) return { gated: [], gateWrites: Promise.resolve() };
  const sorted = [...gates.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const col = <T>(pick: (g: (typeof sorted)[number][1]) => T): T[] =>
    sorted.map(([, g]) => pick(g));
  // The upsert locks every gate row of the batch, in the fixed order. It writes a row only when
  // something changes (a new row, new limits, an earlier ready time): the WHERE of its DO UPDATE
  // skips the write but still takes the lock, so a publish that changes nothing costs its gate
  // a row lock, not a new row version.
  const upserted = db`
    INSERT INTO flow_gates AS g
      (account_id, kind, name, parallelism, rate, period_sec, ready_at, created_at, updated_at)
    SELECT a, k, n, p, r, ps, ra, c, c FROM unnest(
      ${col((g) => g.accountId)}::text[], ${col((g) => g.ref.kind)}::text[],
      ${col((g) => g.ref.name)}::text[],
      ${col((g) => (g.ref.kind === 'queue' ? 1 : (g.ref.parallelism ?? null)))}::integer[],
      ${col((g) => g.ref.rate ?? null)}::integer[], ${col((g) => g.ref.periodSec ?? 1)}::integer[],
      ${col((g) => g.readyAt ?? null)}::bigint[], ${col((g) => g.now)}::bigint[]
    ) WITH ORDINALITY AS u(a, k, n, p, r, ps, ra, c, ord)
    ORDER BY ord
    ON CONFLICT (account_id, kind, name) DO UPDATE SET
      parallelism = CASE WHEN g.kind = 'queue' OR g.pinned_parallelism THEN g.parallelism
        ELSE excluded.parallelism END,
      rate = CASE WHEN g.kind = 'queue' OR g.pinned_rate THEN g.rate ELSE excluded.rate END,
      period_sec = CASE WHEN g.kind = 'queue' OR g.pinned_rate THEN g.period_sec
        ELSE excluded.period_sec END,
      ready_at = LEAST(g.ready_at, excluded.ready_at),
      updated_at = CASE WHEN g.kind = 'queue' THEN g.updated_at ELSE excluded.updated_at END
    WHERE (g.kind = 'key' AND (
        (NOT g.pinned_parallelism AND g.parallelism IS DISTINCT FROM excluded.parallelism)
        OR (NOT g.pinned_rate AND (g.rate IS DISTINCT FROM excluded.rate
          OR g.period_sec <> excluded.period_sec))))
      OR excluded.ready_at < COALESCE(g.ready_at, excluded.ready_at + 1)`.execute();
  // The rows, read right behind the upsert (pipelined: one round trip). A statement starts once
  // the one before it has finished, so its snapshot is taken with the gate rows locked: the
  // holder counts of messages that may start at once see every admission, release and publish of
  // the gate that committed before, and the ones after wait for this transaction (see
  // startAtOnce).
  const atOnceKeys = new Set(entries.filter((e) => e.atOnce).map((e) => e.key));
  const now = Math.max(...entries.map((e) => e.message.createdAt));
  const read = db<CountedGateRow[]>`
    SELECT g.*,
      CASE WHEN u.c = 1 THEN (SELECT count(*)::int FROM messages
        WHERE gate_id = g.id AND wait_due_at IS NULL) END AS holders,
      CASE WHEN u.c = 1 THEN EXISTS (SELECT 1 FROM messages WHERE gate_id = g.id
        AND wait_due_at IS NOT NULL AND wait_due_at <= ${now}) END AS due_waiting
    FROM unnest(${col((g) => g.accountId)}::text[], ${col((g) => g.ref.kind)}::text[],
      ${col((g) => g.ref.name)}::text[], ${sorted.map(([key]) => (atOnceKeys.has(key) ? 1 : 0))}::integer[])
      AS u(a, k, n, c)
    JOIN flow_gates g ON g.account_id = u.a AND g.kind = u.k AND g.name = u.n`;
  const [, rows] = await Promise.all([upserted, read]);
  const byKey = new Map(rows.map((r) => [`${r.account_id}\n${r.kind}\n${r.name}`, r]));
  const idOf = (key: string): string => String(byKey.get(key)?.id ?? '');
  const gateWrites = atOnceKeys.size === 0 ? Promise.resolve() : startAtOnce(db, entries, byKey);
  // Publish order within a gate (`seq`) is taken by the insert itself (see insertGatedMessages).
  const gated = entries.map(({ message, key, ref, waitDueAt }) => ({
    message,
    gateId: idOf(key),
    gateMode: ref.kind,
    waitDueAt,
  }));
  return { gated, gateWrites };
}

/** A gate with its counts, read only for a gate with a message that may start at once. */
type CountedGateRow = FlowGateRow & { holders: number | null; due_waiting: boolean | null };

/**
 * Decides, in publish order, which of the batch's `atOnce` messages start now (clearing their
 * `waitDueAt`), from the gates' counts read under their row locks, and sends what that changes
 * on the gates, if anything: the rate taken, and the ready time of a gate whose message has to
 * wait after all.
 * Returns the write, already sent (the caller's inserts follow it on the connection); the caller
 * awaits it with them.
 */
function startAtOnce(
  db: Db,
  entries: { key: string; waitDueAt?: number; atOnce: boolean; message: Message }[],
  byKey: Map<string, CountedGateRow>,
): Promise<void> {
  const state = new Map<string, { holders: number; blocked: boolean }>();
  for (const row of byKey.values()) {
    if (row.holders === null) continue;
    state.set(String(row.id), { holders: row.holders, blocked: row.due_waiting === true });
  }
  const changes = new Map<string, { readyAt?: number; rateCount?: number; rateStart?: number }>();
  for (const entry of entries) {
    if (!entry.atOnce) continue;
    const row = byKey.get(entry.key);
    const s = row && state.get(String(row.id));
    if (!row || !s) continue;
    const id = String(row.id);
    const change = changes.get(id) ?? {};
    const limits = gateLimits(row);
    if (change.rateCount !== undefined) limits.rateCount = change.rateCount;
    if (change.rateStart !== undefined) limits.ratePeriodStart = change.rateStart;
    const plan = planAdmission(limits, s.holders, entry.message.createdAt, 1);
    if (!s.blocked && plan.take >= 1) {
      entry.waitDueAt = undefined;
      s.holders += 1;
      if (limits.rate !== undefined) {
        change.rateCount = plan.rateCount + 1;
        change.rateStart = plan.ratePeriodStart;
      }
    } else {
      // Waits after all, and so does every later message of this gate in the batch.
      s.blocked = true;
      const due = entry.waitDueAt ?? entry.message.dueAt;
      change.readyAt = Math.min(change.readyAt ?? due, due);
    }
    // Nothing to write for a gate without a rate whose messages all started.
    if (Object.keys(change).length > 0) changes.set(id, change);
  }
  const updates = [...changes.entries()].sort(([a], [b]) => Number(BigInt(a) - BigInt(b)));
  if (updates.length === 0) return Promise.resolve();
  const written = db`
    UPDATE flow_gates f SET
      ready_at = CASE WHEN u.ready_at IS NULL THEN f.ready_at
        ELSE LEAST(COALESCE(f.ready_at, u.ready_at), u.ready_at) END,
      rate_count = COALESCE(u.rate_count, f.rate_count),
      rate_period_start = COALESCE(u.rate_start, f.rate_period_start)
    FROM unnest(${updates.map(([id]) => id)}::bigint[],
           ${updates.map(([, c]) => c.readyAt ?? null)}::bigint[],
           ${updates.map(([, c]) => c.rateCount ?? null)}::integer[],
           ${updates.map(([, c]) => c.rateStart ?? null)}::bigint[])
      AS u(id, ready_at, rate_count, rate_start)
    WHERE f.id = u.id`
    .execute()
    .then(() => undefined);
  // Sent now; a failure reaches the caller through the returned promise (and aborts the
  // transaction), so this handler only keeps it from counting as unhandled meanwhile.
  written.catch(() => undefined);
  return written;
}

/** Parked due time of a gated message: waiting rows stay out of the claim's range. */
export const gatedDueAt = (g: GatedMessage): number =>
  g.waitDueAt === undefined ? g.message.dueAt : PARKED_DUE_AT;

/**
 * A holder of each gate ended: a gate with waiting messages becomes ready (admission looks at it
 * again); one without has nothing to admit, and its next message is admitted as it is published
 * or parks and makes the gate ready itself.
 *
 * The gates are locked first (in the fixed order, see the file header), and the waiting messages
 * are looked for by a second statement, whose snapshot is taken once the locks are held: every
 * publish that parked a message in the gate and every admission that left one waiting (perhaps
 * counting this transaction's uncommitted release as a holder) committed before, so the message
 * is seen; later ones wait for this transaction and see the release. The two statements are sent
 * together: one round trip.
 */
export async function touchGates(db: Db, gateIds: readonly string[]): Promise<void> {
  if (gateIds.length === 0) return;
  const ids = [...new Set(gateIds)];
  const touch = async (tx: Db): Promise<void> => {
    await Promise.all([
      tx`SELECT id FROM flow_gates WHERE id = ANY(${ids}::bigint[])
         ORDER BY account_id, kind, name FOR UPDATE`,
      tx`UPDATE flow_gates g SET ready_at = 0
         WHERE g.id = ANY(${ids}::bigint[]) AND EXISTS (
           SELECT 1 FROM messages m WHERE m.gate_id = g.id AND m.wait_due_at IS NOT NULL)`,
    ]);
  };
  // Both statements must share a transaction: the lock is what makes the check exact.
  await transactional(db, touch);
}

/**
 * One admission round, set-based: a fixed number of statements however many gates are ready.
 * 1. Lock the ready gates (`FOR UPDATE SKIP LOCKED`); the rate window and the per-round cap are
 *    known from the rows alone.
 * 2. Admit the due waiting messages of every gate in one UPDATE per kind. The holder count is
 *    read in that statement, so after the lock: a release that committed before is seen, one
 *    that did not waits for this transaction and makes the gate ready after it.
 * 3. Read each gate's holders (now including the admitted) and its next waiting message;
 *    pipelined with step 2 (a later statement of the same transaction sees its writes).
 * 4. Write every gate's ready time and rate state in one UPDATE.
 */
export async function flowGateAdmit(
  db: Db,
  { now, limit }: FlowGateAdmitParams,
): Promise<FlowGateAdmitResult> {
  return transactional(db, async (tx) => {
    const gates = await tx<FlowGateRow[]>`
      SELECT * FROM flow_gates WHERE ready_at <= ${now} ORDER BY ready_at LIMIT ${limit}
      FOR UPDATE SKIP LOCKED`;
    if (gates.length === 0) return { admitted: 0, gates: 0 };
    const planned = gates.map((row) => {
      const limits = gateLimits(row);
      // Holders are counted in SQL; with none the plan is the rate budget and the round cap.
      const plan = planAdmission({ ...limits, parallelism: undefined }, 0, now, MAX_ADMIT_PER_GATE);
      return { row, limits, plan, id: String(row.id), fifo: row.kind === 'queue' };
    });
    const open = (fifo: boolean) => planned.filter((g) => g.fifo === fifo && g.plan.take > 0);
    const keys = open(false);
    const queues = open(true);
    // The LIMIT is the gate's free slots (`cap` minus its holders) within its `budget`.
    // SKIP LOCKED: a waiting row locked by a concurrent cancel is about to disappear.
    // A key takes its due messages by due time; a queue is strictly FIFO: its head starts first
    // and waits for its time, so the due prefix of its head is taken.
    const admitKeys =
      keys.length === 0
        ? []
        : tx<{ gate_id: string }[]>`
            UPDATE messages m SET due_at = m.wait_due_at, wait_due_at = NULL
            FROM unnest(${keys.map((g) => g.id)}::bigint[],
                   ${keys.map((g) => g.row.parallelism)}::integer[],
                   ${keys.map((g) => g.plan.take)}::integer[]) AS g(id, cap, budget)
              CROSS JOIN LATERAL (
                SELECT id FROM messages
                WHERE gate_id = g.id AND wait_due_at IS NOT NULL AND wait_due_at <= ${now}
                ORDER BY wait_due_at, seq LIMIT greatest(0, least(g.cap - (SELECT count(*) FROM messages
                  WHERE gate_id = g.id AND wait_due_at IS NULL), g.budget)) FOR UPDATE SKIP LOCKED) w
            WHERE m.id = w.id RETURNING m.gate_id`;
    const admitQueues =
      queues.length === 0
        ? []
        : tx<{ gate_id: string }[]>`
            UPDATE messages m SET due_at = m.wait_due_at, wait_due_at = NULL
            FROM (SELECT h.id, bool_and(h.wait_due_at <= ${now})
                    OVER (PARTITION BY h.gate_id ORDER BY h.seq) AS due
                  FROM unnest(${queues.map((g) => g.id)}::bigint[],
                         ${queues.map((g) => g.row.parallelism)}::integer[],
                         ${queues.map((g) => g.plan.take)}::integer[]) AS g(id, cap, budget)
                    CROSS JOIN LATERAL (
                      SELECT id, gate_id, wait_due_at, seq FROM messages
                      WHERE gate_id = g.id AND wait_due_at IS NOT NULL
                      ORDER BY seq LIMIT greatest(0, least(g.cap - (SELECT count(*) FROM messages
                  WHERE gate_id = g.id AND wait_due_at IS NULL), g.budget)) FOR UPDATE SKIP LOCKED) h) w
            WHERE m.id = w.id AND w.due RETURNING m.gate_id`;
    const after = tx<{ id: string; holders: number; next: string | null }[]>`
      SELECT g.id,
        (SELECT count(*)::int FROM messages WHERE gate_id = g.id AND wait_due_at IS NULL)
          AS holders,
        CASE WHEN g.kind = 'queue'
          THEN (SELECT wait_due_at FROM messages WHERE gate_id = g.id AND wait_due_at IS NOT NULL
                ORDER BY seq LIMIT 1)
          ELSE (SELECT min(wait_due_at) FROM messages
                WHERE gate_id = g.id AND wait_due_at IS NOT NULL) END AS next
      FROM unnest(${planned.map((g) => g.id)}::bigint[], ${planned.map((g) => g.row.kind)}::text[])
        AS g(id, kind)`;
    const [keyRows, queueRows, states] = await Promise.all([admitKeys, admitQueues, after]);
    const taken = new Map<string, number>();
    for (const r of [...keyRows, ...queueRows]) {
      const id = String(r.gate_id);
      taken.set(id, (taken.get(id) ?? 0) + 1);
    }
    const state = new Map(states.map((s) => [String(s.id), s]));
    const updates = planned.map(({ id, limits, plan }) => {
      const n = taken.get(id) ?? 0;
      const s = state.get(id);
      const rateCount = plan.rateCount + (limits.rate === undefined ? 0 : n);
      const readyAt = nextReadyAt({
        gate: limits,
        holders: s?.holders ?? 0,
        rateCount,
        ratePeriodStart: plan.ratePeriodStart,
        nextWaitDue: s?.next == null ? undefined : Number(s.next),
        now,
      });
      return { id, readyAt: readyAt ?? null, rateCount, ratePeriodStart: plan.ratePeriodStart };
    });
    await tx`
      UPDATE flow_gates f SET ready_at = u.ready_at, rate_count = u.rate_count,
        rate_period_start = u.rate_period_start
      FROM unnest(${updates.map((u) => u.id)}::bigint[], ${updates.map((u) => u.readyAt)}::bigint[],
             ${updates.map((u) => u.rateCount)}::integer[],
             ${updates.map((u) => u.ratePeriodStart)}::bigint[])
        AS u(id, ready_at, rate_count, rate_period_start)
      WHERE f.id = u.id`;
    return { admitted: keyRows.length + queueRows.length, gates: gates.length };
  });
}

/** A gate row with the sizes of its wait list and of its holders. */
type GateWithCounts = FlowGateRow & { waiting: number; holding: number };

/** The `waiting` and `holding` columns of gate `g`: two index range counts. */
const countColumns = (db: Db) => db`
  (SELECT count(*)::int FROM messages WHERE gate_id = g.id AND wait_due_at IS NOT NULL)
    AS waiting,
  (SELECT count(*)::int FROM messages WHERE gate_id = g.id AND wait_due_at IS NULL) AS holding`;

const gateFromCounted = (row: GateWithCounts): FlowGate =>
  flowGateFromRow(row, { waitListSize: row.waiting, parallelismCount: row.holding });

export async function flowGateGet(db: Db, p: FlowGateKeyParams): Promise<FlowGate | undefined> {
  const [row] = await db<GateWithCounts[]>`
    SELECT g.*, ${countColumns(db)} FROM flow_gates g
    WHERE account_id = ${p.accountId} AND kind = ${p.kind} AND name = ${p.name}`;
  return row && gateFromCounted(row);
}

/** One statement however many gates match (the counts are subqueries per row). */
export async function flowGateList(db: Db, p: FlowGateListParams): Promise<FlowGate[]> {
  const rows =
    p.search === undefined || p.search === ''
      ? await db<GateWithCounts[]>`
          SELECT g.*, ${countColumns(db)} FROM flow_gates g
          WHERE account_id = ${p.accountId} AND kind = ${p.kind}
          ORDER BY name`
      : await db<GateWithCounts[]>`
          SELECT g.*, ${countColumns(db)} FROM flow_gates g
          WHERE account_id = ${p.accountId} AND kind = ${p.kind}
            AND name LIKE ${likeContains(p.search)} ESCAPE '\\'
          ORDER BY name`;
  return rows.map(gateFromCounted);
}

export async function flowGateUpdate(
  db: Db,
  p: FlowGateUpdateParams,
): Promise<FlowGate | undefined> {
  return atomically(db, async (tx) => {
    const [row] = await tx<FlowGateRow[]>`
      SELECT * FROM flow_gates
      WHERE account_id = ${p.accountId} AND kind = ${p.kind} AND name = ${p.name} FOR UPDATE`;
    if (!row) return undefined;
    const keep = <T>(value: T | undefined, current: T): T =>
      value === undefined ? current : value;
    await tx`
      UPDATE flow_gates SET
        paused = ${keep(p.paused, Boolean(row.paused))},
        parallelism = ${keep(p.parallelism, row.parallelism)},
        rate = ${keep(p.rate, row.rate)},
        period_sec = ${keep(p.periodSec, row.period_sec)},
        pinned_parallelism = ${keep(p.pinnedParallelism, Boolean(row.pinned_parallelism))},
        pinned_rate = ${keep(p.pinnedRate, Boolean(row.pinned_rate))},
        rate_count = ${p.resetRate ? 0 : row.rate_count},
        rate_period_start = ${p.resetRate ? p.now : Number(row.rate_period_start)},
        ready_at = ${p.now},
        updated_at = ${p.now}
      WHERE id = ${row.id}`;
    return flowGateGet(tx, p);
  });
}

export async function flowGateDelete(db: Db, p: FlowGateKeyParams): Promise<boolean> {
  const result = await db`
    DELETE FROM flow_gates
    WHERE account_id = ${p.accountId} AND kind = ${p.kind} AND name = ${p.name}`;
  return result.count > 0;
}

/** Count and insert under a transaction-scoped advisory lock per account, like max_schedules. */
export async function queueUpsert(db: Db, p: QueueUpsertParams): Promise<QueueUpsertResult> {
  return atomically(db, async (tx) => {
    await tx`SELECT pg_advisory_xact_lock(hashtext('ferry-queues:' || ${p.accountId}))`;
    const updated = await tx`
      UPDATE flow_gates SET
        parallelism = COALESCE(${p.parallelism ?? null}::integer, parallelism),
        paused = COALESCE(${p.paused ?? null}::boolean, paused),
        ready_at = ${p.now}, updated_at = ${p.now}
      WHERE account_id = ${p.accountId} AND kind = 'queue' AND name = ${p.name}`;
    if (updated.count > 0) return 'updated';
    const [counted] = await tx<{ n: number }[]>`
      SELECT count(*)::int AS n FROM flow_gates
      WHERE account_id = ${p.accountId} AND kind = 'queue'`;
    if ((counted?.n ?? 0) >= p.maxQueues) return 'limit';
    await tx`
      INSERT INTO flow_gates
        (account_id, kind, name, parallelism, period_sec, paused, created_at, updated_at)
      VALUES (${p.accountId}, 'queue', ${p.name}, ${p.parallelism ?? 1}, 1, ${p.paused ?? false},
        ${p.now}, ${p.now})
      ON CONFLICT (account_id, kind, name) DO NOTHING`;
    return 'created';
  });
}
