/**
 * Flow-control keys and queues on the SQLite connection (see core/flow-control.ts), synchronous.
 *
 * Unlike PostgreSQL, no row locks are needed: every write transaction holds the database's write
 * lock, so an admission, a publish into the gate and a release are serialized anyway.
 */
import {
  type FlowGate,
  type GateRef,
  nextReadyAt,
  planAdmission,
} from '../../core/flow-control.js';
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
import type { SqliteStatements } from './sqlite-statements.js';

/** Most messages one gate admits per round; a larger backlog continues in the next round. */
const MAX_ADMIT_PER_GATE = 500;

const UPSERT_GATE =
  'INSERT INTO flow_gates (account_id, kind, name, parallelism, rate, period_sec, ready_at, ' +
  'created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ' +
  'ON CONFLICT (account_id, kind, name) DO UPDATE SET ' +
  // A key's limits follow each publish unless pinned; a queue's change only through its API.
  "parallelism = CASE WHEN kind = 'queue' OR pinned_parallelism THEN parallelism " +
  'ELSE excluded.parallelism END, ' +
  "rate = CASE WHEN kind = 'queue' OR pinned_rate THEN rate ELSE excluded.rate END, " +
  "period_sec = CASE WHEN kind = 'queue' OR pinned_rate THEN period_sec " +
  'ELSE excluded.period_sec END, ' +
  'ready_at = CASE WHEN excluded.ready_at IS NULL THEN ready_at ' +
  'ELSE min(coalesce(ready_at, excluded.ready_at), excluded.ready_at) END, ' +
  // A queue's updatedAt is when its settings last changed (through its API), not every enqueue.
  "updated_at = CASE WHEN kind = 'queue' THEN updated_at ELSE excluded.updated_at END RETURNING id";

/**
 * The same upsert for a message that may start at once: back come the columns the admission
 * needs (only those: building a row object costs per column), the ready time is left alone.
 */
const UPSERT_GATE_LIMITS = UPSERT_GATE.replace(
  /RETURNING id$/,
  'RETURNING id, parallelism, rate, period_sec, rate_count, rate_period_start, paused',
);
type GateLimitsRow = Pick<
  FlowGateRow,
  'id' | 'parallelism' | 'rate' | 'period_sec' | 'rate_count' | 'rate_period_start' | 'paused'
>;
const PARK_AT = 'UPDATE flow_gates SET ready_at = min(coalesce(ready_at, ?), ?) WHERE id = ?';
// A waiting message due by now (a delayed one does not hold back later messages of its key).
const DUE_WAITING =
  'SELECT 1 AS n FROM messages WHERE gate_id = ? AND wait_due_at IS NOT NULL ' +
  'AND wait_due_at <= ? LIMIT 1';
const COUNT_HOLDERS =
  'SELECT count(*) AS n FROM messages WHERE gate_id = ? AND gate_id IS NOT NULL AND wait_due_at IS NULL';
const COUNT_WAITING =
  'SELECT count(*) AS n FROM messages WHERE gate_id = ? AND wait_due_at IS NOT NULL';
// The rowid is the publish order (a new row's rowid is larger than every existing one's).
const FIRST_WAITING =
  'SELECT rowid AS r, wait_due_at FROM messages WHERE gate_id = ? AND wait_due_at IS NOT NULL ' +
  'AND wait_due_at <= ? ORDER BY wait_due_at, rowid LIMIT ?';
const NEXT_WAITING =
  'SELECT wait_due_at FROM messages WHERE gate_id = ? AND wait_due_at IS NOT NULL ' +
  'ORDER BY wait_due_at, rowid LIMIT 1';
// A queue is strictly FIFO: its head (oldest published) starts first, and waits for its time.
const QUEUE_HEAD =
  'SELECT rowid AS r, wait_due_at FROM messages WHERE gate_id = ? AND wait_due_at IS NOT NULL ' +
  'ORDER BY rowid LIMIT ?';

interface Waiting {
  r: number;
  wait_due_at: number;
}

/** The messages at the head of a queue that are due: a head that is not due yet blocks. */
function queuePrefix(head: Waiting[], now: number): Waiting[] {
  const end = head.findIndex((w) => w.wait_due_at > now);
  return end === -1 ? head : head.slice(0, end);
}

export class SqliteFlowGateOps {
  /**
   * No gate is ready before this time (ms): a lower bound of `min(ready_at)`, so a claim with
   * nothing ready skips the admission query. The file belongs to this process (opened
   * exclusively), so every write of `ready_at` passes here: a write that may lower it lowers the
   * bound; only an admission round that saw every ready gate raises it, from the table. A
   * rollback may undo such a round: the executor then calls `forgetReady()`.
   */
  private readyBound = 0;

  constructor(private readonly statements: SqliteStatements) {}

  /** False when no gate is ready at `now` (admission would find nothing to do). */
  mayBeReady(now: number): boolean {
    return now >= this.readyBound;
  }

  /** The bound is unknown again (a transaction or savepoint rolled back): admission reads. */
  forgetReady(): void {
    this.readyBound = 0;
  }

  private lowerReady(at: number | null | undefined): void {
    if (at !== null && at !== undefined) this.readyBound = Math.min(this.readyBound, at);
  }

  private readReady(): void {
    const { t } = this.statements
      .get('SELECT min(ready_at) AS t FROM flow_gates WHERE ready_at IS NOT NULL')
      .get() as { t: number | null };
    this.readyBound = t ?? Infinity;
  }

  /**
   * Creates the message's gate or updates its limits. A message that waits (`waitDueAt`) makes
   * the gate ready by then, except a key's message that is due now and that the gate admits at
   * once: nobody due waits ahead of it, and a slot and the rate allow it. That one starts as a holder
   * (`waits: false`) and counts toward the rate, as an admission round would have done, without
   * the round. Called inside the insert's transaction.
   */
  enter(
    accountId: string,
    gate: GateRef,
    now: number,
    waitDueAt: number | undefined,
  ): { id: number; waits: boolean } {
    const atOnce = gate.kind === 'key' && waitDueAt !== undefined && waitDueAt <= now;
    if (!atOnce) this.lowerReady(waitDueAt);
    const row = this.statements
      .get(atOnce ? UPSERT_GATE_LIMITS : UPSERT_GATE)
      .get(
        accountId,
        gate.kind,
        gate.name,
        gate.kind === 'queue' ? 1 : (gate.parallelism ?? null),
        gate.rate ?? null,
        gate.periodSec ?? 1,
        atOnce ? null : (waitDueAt ?? null),
        now,
        now,
      ) as GateLimitsRow;
    const id = Number(row.id);
    if (!atOnce) return { id, waits: waitDueAt !== undefined };
    if (this.admitNow(row, now)) return { id, waits: false };
    this.lowerReady(waitDueAt);
    this.statements.get(PARK_AT).run(waitDueAt, waitDueAt, id);
    return { id, waits: true };
  }

  /** Takes a slot (and a unit of the rate) of the gate for a message due now, if it may start. */
  private admitNow(row: GateLimitsRow, now: number): boolean {
    const id = Number(row.id);
    // Publish order: a message never overtakes a due one that waits in the same gate.
    if (this.statements.get(DUE_WAITING).get(id, now) !== undefined) return false;
    const limits = gateLimits(row);
    const holders = limits.parallelism === undefined ? 0 : this.count(COUNT_HOLDERS, id);
    const plan = planAdmission(limits, holders, now, 1);
    if (plan.take < 1) return false;
    if (limits.rate !== undefined) {
      this.statements
        .get('UPDATE flow_gates SET rate_count = ?, rate_period_start = ? WHERE id = ?')
        .run(plan.rateCount + 1, plan.ratePeriodStart, id);
    }
    return true;
  }

  /**
   * A holder ended (deleted, or a key's attempt ended with a retry): a gate with waiting messages
   * admits again. One without any has nothing to admit: its next message is admitted as it is
   * published, or parks and makes the gate ready itself. (This process is the only writer, so
   * no message can start waiting between the check and the update.)
   */
  touch(gateIds: Iterable<number>): void {
    const update = this.statements.get(
      'UPDATE flow_gates SET ready_at = 0 WHERE id = ? AND EXISTS ' +
        '(SELECT 1 FROM messages WHERE gate_id = ? AND wait_due_at IS NOT NULL)',
    );
    for (const id of gateIds) {
      if (update.run(id, id).changes > 0) this.lowerReady(0);
    }
  }

  flowGateAdmit({ now, limit }: FlowGateAdmitParams): FlowGateAdmitResult {
    if (now < this.readyBound) return { admitted: 0, gates: 0 };
    const st = this.statements;
    const gates = st
      .get('SELECT * FROM flow_gates WHERE ready_at <= ? ORDER BY ready_at LIMIT ?')
      .all(now, limit) as FlowGateRow[];
    if (gates.length === 0) {
      this.readReady();
      return { admitted: 0, gates: 0 };
    }
    const result = st.atomic(() => {
      let admitted = 0;
      const admit = st.get(
        'UPDATE messages SET due_at = wait_due_at, wait_due_at = NULL WHERE rowid = ?',
      );
      for (const row of gates) {
        const id = Number(row.id);
        const limits = gateLimits(row);
        const holders = this.count(COUNT_HOLDERS, id);
        const plan = planAdmission(limits, holders, now, MAX_ADMIT_PER_GATE);
        const fifo = row.kind === 'queue';
        let taken = 0;
        if (plan.take > 0) {
          const due = fifo
            ? queuePrefix(st.get(QUEUE_HEAD).all(id, plan.take) as Waiting[], now)
            : (st.get(FIRST_WAITING).all(id, now, plan.take) as Waiting[]);
          for (const { r } of due) admit.run(r);
          taken = due.length;
        }
        const next = st.get(fifo ? QUEUE_HEAD : NEXT_WAITING).get(id, ...(fifo ? [1] : [])) as
          { wait_due_at: number } | undefined;
        const rateCount = plan.rateCount + (limits.rate === undefined ? 0 : taken);
        const readyAt = nextReadyAt({
          gate: limits,
          holders: holders + taken,
          rateCount,
          ratePeriodStart: plan.ratePeriodStart,
          nextWaitDue: next?.wait_due_at,
          now,
        });
        st.get(
          'UPDATE flow_gates SET ready_at = ?, rate_count = ?, rate_period_start = ? WHERE id = ?',
        ).run(readyAt ?? null, rateCount, plan.ratePeriodStart, id);
        admitted += taken;
      }
      return { admitted, gates: gates.length };
    });
    // Every ready gate was seen: the next ready time is in the table now.
    if (gates.length < limit) this.readReady();
    return result;
  }

  flowGateGet({ accountId, kind, name }: FlowGateKeyParams): FlowGate | undefined {
    const row = this.statements
      .get('SELECT * FROM flow_gates WHERE account_id = ? AND kind = ? AND name = ?')
      .get(accountId, kind, name) as FlowGateRow | undefined;
    return row && this.withCounts(row);
  }

  flowGateList({ accountId, kind, search }: FlowGateListParams): FlowGate[] {
    const rows = (
      search === undefined || search === ''
        ? this.statements
            .get('SELECT * FROM flow_gates WHERE account_id = ? AND kind = ? ORDER BY name')
            .all(accountId, kind)
        : this.statements
            .get(
              'SELECT * FROM flow_gates WHERE account_id = ? AND kind = ? ' +
                "AND name LIKE ? ESCAPE '\\' ORDER BY name",
            )
            .all(accountId, kind, likeContains(search))
    ) as FlowGateRow[];
    return rows.map((row) => this.withCounts(row));
  }

  flowGateUpdate(p: FlowGateUpdateParams): FlowGate | undefined {
    return this.statements.atomic(() => {
      const row = this.statements
        .get('SELECT * FROM flow_gates WHERE account_id = ? AND kind = ? AND name = ?')
        .get(p.accountId, p.kind, p.name) as FlowGateRow | undefined;
      if (!row) return undefined;
      const next: FlowGateRow = { ...row, ready_at: p.now, updated_at: p.now };
      this.lowerReady(p.now);
      if (p.paused !== undefined) next.paused = p.paused ? 1 : 0;
      if (p.parallelism !== undefined) next.parallelism = p.parallelism;
      if (p.rate !== undefined) next.rate = p.rate;
      if (p.periodSec !== undefined) next.period_sec = p.periodSec;
      if (p.pinnedParallelism !== undefined) next.pinned_parallelism = p.pinnedParallelism ? 1 : 0;
      if (p.pinnedRate !== undefined) next.pinned_rate = p.pinnedRate ? 1 : 0;
      if (p.resetRate) {
        next.rate_count = 0;
        next.rate_period_start = p.now;
      }
      this.statements
        .get(
          'UPDATE flow_gates SET paused = ?, parallelism = ?, rate = ?, period_sec = ?, ' +
            'pinned_parallelism = ?, pinned_rate = ?, rate_count = ?, rate_period_start = ?, ' +
            'ready_at = ?, updated_at = ? WHERE id = ?',
        )
        .run(
          next.paused,
          next.parallelism,
          next.rate,
          next.period_sec,
          next.pinned_parallelism,
          next.pinned_rate,
          next.rate_count,
          next.rate_period_start,
          next.ready_at,
          next.updated_at,
          row.id,
        );
      return this.withCounts(next);
    });
  }

  flowGateDelete({ accountId, kind, name }: FlowGateKeyParams): boolean {
    return (
      this.statements
        .get('DELETE FROM flow_gates WHERE account_id = ? AND kind = ? AND name = ?')
        .run(accountId, kind, name).changes > 0
    );
  }

  queueUpsert(p: QueueUpsertParams): QueueUpsertResult {
    const st = this.statements;
    this.lowerReady(p.now);
    return st.atomic(() => {
      const existing = st
        .get("SELECT id FROM flow_gates WHERE account_id = ? AND kind = 'queue' AND name = ?")
        .get(p.accountId, p.name) as { id: number } | undefined;
      if (existing) {
        st.get(
          'UPDATE flow_gates SET parallelism = coalesce(?, parallelism), ' +
            'paused = coalesce(?, paused), ready_at = ?, updated_at = ? WHERE id = ?',
        ).run(
          p.parallelism ?? null,
          p.paused === undefined ? null : p.paused ? 1 : 0,
          p.now,
          p.now,
          existing.id,
        );
        return 'updated';
      }
      const count = this.count(
        "SELECT count(*) AS n FROM flow_gates WHERE account_id = ? AND kind = 'queue'",
        p.accountId,
      );
      if (count >= p.maxQueues) return 'limit';
      st.get(
        'INSERT INTO flow_gates (account_id, kind, name, parallelism, period_sec, paused, ' +
          "created_at, updated_at) VALUES (?, 'queue', ?, ?, 1, ?, ?, ?)",
      ).run(p.accountId, p.name, p.parallelism ?? 1, p.paused ? 1 : 0, p.now, p.now);
      return 'created';
    });
  }

  private count(sql: string, ...args: unknown[]): number {
    return (this.statements.get(sql).get(...args) as { n: number }).n;
  }

  private withCounts(row: FlowGateRow): FlowGate {
    const id = Number(row.id);
    return flowGateFromRow(row, {
      waitListSize: this.count(COUNT_WAITING, id),
      parallelismCount: this.count(COUNT_HOLDERS, id),
    });
  }
}
