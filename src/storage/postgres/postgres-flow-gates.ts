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
import type { Db } from './postgres-rows.js';

/** Most messages one gate admits per round; a larger backlog continues in the next round. */
const MAX_ADMIT_PER_GATE = 500;

/** A message with the gate columns it is inserted with. */
export interface GatedMessage {
  message: Message;
  gateId: string;
  gateMode: string;
  waitDueAt: number | undefined;
  /** Publish order within the gate, from the `messages_seq` sequence. */
  seq: string;
}

/** Runs `fn` atomically: in a savepoint inside a transaction, else in a transaction of its own. */
export function atomically<T>(db: Db, fn: (tx: Db) => Promise<T>): Promise<T> {
  return ('savepoint' in db ? db.savepoint(fn) : db.begin(fn)) as Promise<T>;
}

const gateKey = (accountId: string, gate: Pick<GateRef, 'kind' | 'name'>): string =>
  `${accountId}\n${gate.kind}\n${gate.name}`;

/**
 * Creates or updates the gates of `messages` (one row per gate; the last message's limits win,
 * as if each were published in turn) and returns each gated message with its gate columns.
 */
export async function enterGates(db: Db, messages: readonly Message[]): Promise<GatedMessage[]> {
  const gates = new Map<
    string,
    { accountId: string; ref: GateRef; readyAt?: number; now: number }
  >();
  const gated: { message: Message; key: string; ref: GateRef; waitDueAt?: number }[] = [];
  for (const message of messages) {
    const ref = gateOf(message);
    if (!ref) continue;
    const key = gateKey(message.accountId, ref);
    const waitDueAt = ref.mode === 'wait' ? message.dueAt : undefined;
    const previous = gates.get(key);
    const readyAt =
      waitDueAt === undefined
        ? previous?.readyAt
        : Math.min(previous?.readyAt ?? waitDueAt, waitDueAt);
    gates.set(key, { accountId: message.accountId, ref, readyAt, now: message.createdAt });
    gated.push({ message, key, ref, ...(waitDueAt === undefined ? {} : { waitDueAt }) });
  }
  if (gated.length === 0) return [];
  const sorted = [...gates.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const col = <T>(pick: (g: (typeof sorted)[number][1]) => T): T[] =>
    sorted.map(([, g]) => pick(g));
  const rows = await db<{ id: string; account_id: string; kind: string; name: string }[]>`
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
      updated_at = excluded.updated_at
    RETURNING id, account_id, kind, name`;
  const ids = new Map(rows.map((r) => [`${r.account_id}\n${r.kind}\n${r.name}`, String(r.id)]));
  // Sequence values for the batch, handed out in input order (sorted: a set has no row order).
  const seqs = (
    await db<{ s: string }[]>`
      SELECT nextval('messages_seq')::text AS s FROM generate_series(1, ${gated.length})`
  )
    .map((r) => BigInt(r.s))
    .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return gated.map(({ message, key, ref, waitDueAt }, i) => ({
    message,
    gateId: ids.get(key) ?? '',
    gateMode: ref.kind,
    waitDueAt,
    seq: String(seqs[i]),
  }));
}

/** Parked due time of a gated message: waiting rows stay out of the claim's range. */
export const gatedDueAt = (g: GatedMessage): number =>
  g.waitDueAt === undefined ? g.message.dueAt : PARKED_DUE_AT;

/** Makes the gates ready (a holder ended). Locks them in a fixed order (see the file header). */
export async function touchGates(db: Db, gateIds: readonly string[]): Promise<void> {
  if (gateIds.length === 0) return;
  await db`
    UPDATE flow_gates g SET ready_at = 0
    FROM (SELECT id FROM flow_gates WHERE id = ANY(${[...new Set(gateIds)]}::bigint[])
          ORDER BY account_id, kind, name FOR UPDATE) l
    WHERE g.id = l.id`;
}

export async function flowGateAdmit(
  db: Db,
  { now, limit }: FlowGateAdmitParams,
): Promise<FlowGateAdmitResult> {
  return atomically(db, async (tx) => {
    const gates = await tx<FlowGateRow[]>`
      SELECT * FROM flow_gates WHERE ready_at <= ${now} ORDER BY ready_at LIMIT ${limit}
      FOR UPDATE SKIP LOCKED`;
    let admitted = 0;
    for (const row of gates) {
      const limits = gateLimits(row);
      const [counted] = await tx<{ n: number }[]>`
        SELECT count(*)::int AS n FROM messages WHERE gate_id = ${row.id} AND wait_due_at IS NULL`;
      const holders = counted?.n ?? 0;
      const plan = planAdmission(limits, holders, now, MAX_ADMIT_PER_GATE);
      const fifo = row.kind === 'queue';
      let taken = 0;
      if (plan.take > 0) {
        // SKIP LOCKED: a waiting row locked by a concurrent cancel is about to disappear.
        // A queue is strictly FIFO: its head starts first and waits for its time, so the due
        // prefix of the head is taken; a key takes the due messages by due time.
        const rows = fifo
          ? await tx`
              UPDATE messages m SET due_at = m.wait_due_at, wait_due_at = NULL
              FROM (SELECT id, wait_due_at, seq,
                      bool_and(wait_due_at <= ${now}) OVER (ORDER BY seq) AS due
                    FROM (SELECT id, wait_due_at, seq FROM messages
                          WHERE gate_id = ${row.id} AND wait_due_at IS NOT NULL
                          ORDER BY seq LIMIT ${plan.take} FOR UPDATE SKIP LOCKED) h) w
              WHERE m.id = w.id AND w.due RETURNING m.id`
          : await tx`
              UPDATE messages m SET due_at = m.wait_due_at, wait_due_at = NULL
              FROM (SELECT id FROM messages
                    WHERE gate_id = ${row.id} AND wait_due_at IS NOT NULL AND wait_due_at <= ${now}
                    ORDER BY wait_due_at, seq LIMIT ${plan.take} FOR UPDATE SKIP LOCKED) w
              WHERE m.id = w.id RETURNING m.id`;
        taken = rows.length;
      }
      const [next] = fifo
        ? await tx<{ wait_due_at: string }[]>`
            SELECT wait_due_at FROM messages WHERE gate_id = ${row.id} AND wait_due_at IS NOT NULL
            ORDER BY seq LIMIT 1`
        : await tx<{ wait_due_at: string }[]>`
            SELECT wait_due_at FROM messages WHERE gate_id = ${row.id} AND wait_due_at IS NOT NULL
            ORDER BY wait_due_at, seq LIMIT 1`;
      const rateCount = plan.rateCount + (limits.rate === undefined ? 0 : taken);
      const readyAt = nextReadyAt({
        gate: limits,
        holders: holders + taken,
        rateCount,
        ratePeriodStart: plan.ratePeriodStart,
        nextWaitDue: next ? Number(next.wait_due_at) : undefined,
        now,
      });
      await tx`
        UPDATE flow_gates SET ready_at = ${readyAt ?? null}, rate_count = ${rateCount},
          rate_period_start = ${plan.ratePeriodStart}
        WHERE id = ${row.id}`;
      admitted += taken;
    }
    return { admitted, gates: gates.length };
  });
}

async function withCounts(db: Db, row: FlowGateRow): Promise<FlowGate> {
  const [counts] = await db<{ waiting: number; holding: number }[]>`
    SELECT
      (SELECT count(*)::int FROM messages WHERE gate_id = ${row.id} AND wait_due_at IS NOT NULL)
        AS waiting,
      (SELECT count(*)::int FROM messages WHERE gate_id = ${row.id} AND wait_due_at IS NULL)
        AS holding`;
  return flowGateFromRow(row, {
    waitListSize: counts?.waiting ?? 0,
    parallelismCount: counts?.holding ?? 0,
  });
}

export async function flowGateGet(db: Db, p: FlowGateKeyParams): Promise<FlowGate | undefined> {
  const [row] = await db<FlowGateRow[]>`
    SELECT * FROM flow_gates
    WHERE account_id = ${p.accountId} AND kind = ${p.kind} AND name = ${p.name}`;
  return row && withCounts(db, row);
}

export async function flowGateList(db: Db, p: FlowGateListParams): Promise<FlowGate[]> {
  const rows =
    p.search === undefined || p.search === ''
      ? await db<FlowGateRow[]>`
          SELECT * FROM flow_gates WHERE account_id = ${p.accountId} AND kind = ${p.kind}
          ORDER BY name`
      : await db<FlowGateRow[]>`
          SELECT * FROM flow_gates WHERE account_id = ${p.accountId} AND kind = ${p.kind}
            AND name LIKE ${likeContains(p.search)} ESCAPE '\\'
          ORDER BY name`;
  return Promise.all(rows.map((row) => withCounts(db, row)));
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
    const [updated] = await tx<FlowGateRow[]>`
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
      WHERE id = ${row.id} RETURNING *`;
    return updated && withCounts(tx, updated);
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
