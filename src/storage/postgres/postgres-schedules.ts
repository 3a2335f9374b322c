/** Cron schedules. */
import type { Schedule } from '../../core/schedule.js';
import type {
  ScheduleAdvanceManyParams,
  ScheduleClaimDueParams,
  ScheduleDeleteParams,
  ScheduleGetParams,
  ScheduleListParams,
  ScheduleSetPausedParams,
  ScheduleUpsertParams,
  ScheduleUpsertResult,
} from '../driver.js';
import {
  SCHEDULE_COLUMNS,
  scheduleListColumns,
  scheduleFromRow,
  scheduleValues,
  type ScheduleRow,
} from '../sql/schedule-rows.js';
import { BYTEA_OID, type Db } from './postgres-rows.js';

/**
 * First key of the advisory lock that serializes schedule creation per account (the second is a
 * hash of the account id). Two-key advisory locks never collide with the migration lock, which
 * uses the one-key form.
 */
const SCHEDULE_LOCK_CLASS = 0x46657279; // "Fery"

const INSERT = `INSERT INTO schedules (${SCHEDULE_COLUMNS.join(', ')})
  VALUES (${SCHEDULE_COLUMNS.map((_, i) => `$${i + 1}`).join(', ')})`;

/**
 * Must run in a transaction (the executor wraps it in one). Unlike SQLite, where the single
 * writer makes count-then-insert atomic, two nodes could both count below `maxSchedules` and
 * both insert: a transaction-scoped advisory lock per account serializes them.
 */
export async function scheduleUpsert(
  db: Db,
  p: ScheduleUpsertParams,
): Promise<ScheduleUpsertResult> {
  const s = p.schedule;
  await db`SELECT pg_advisory_xact_lock(${SCHEDULE_LOCK_CLASS}, hashtext(${s.accountId}))`;
  const deleted =
    await db`DELETE FROM schedules WHERE account_id = ${s.accountId} AND id = ${s.id}`;
  const replaced = deleted.count > 0;
  if (!replaced) {
    const [row] = await db<{ n: string }[]>`
      SELECT count(*) AS n FROM schedules WHERE account_id = ${s.accountId}`;
    if (Number(row?.n ?? 0) >= p.maxSchedules) return 'limit';
  }
  const values = scheduleValues(s).map((v) =>
    v instanceof Uint8Array ? db.typed(v, BYTEA_OID) : v,
  );
  await db.unsafe(INSERT, values, { prepare: true });
  return replaced ? 'replaced' : 'created';
}

export async function scheduleGet(db: Db, p: ScheduleGetParams): Promise<Schedule | undefined> {
  const [row] = await db<ScheduleRow[]>`
    SELECT * FROM schedules WHERE account_id = ${p.accountId} AND id = ${p.id}`;
  return row && scheduleFromRow(row);
}

export async function scheduleList(db: Db, p: ScheduleListParams): Promise<Schedule[]> {
  // substr() on bytea is substring(): only the slice of an out-of-line body is fetched.
  const rows = await db.unsafe<ScheduleRow[]>(
    `SELECT ${scheduleListColumns('$1')} FROM schedules WHERE account_id = $2
      ORDER BY created_at, id`,
    [p.bodyCut ?? 2_147_483_647, p.accountId],
    { prepare: true },
  );
  return rows.map(scheduleFromRow);
}

export async function scheduleDelete(db: Db, p: ScheduleDeleteParams): Promise<boolean> {
  const result = await db`DELETE FROM schedules WHERE account_id = ${p.accountId} AND id = ${p.id}`;
  return result.count > 0;
}

export async function scheduleSetPaused(db: Db, p: ScheduleSetPausedParams): Promise<boolean> {
  const result =
    p.nextScheduleTime === undefined
      ? await db`UPDATE schedules SET paused = ${p.paused}
          WHERE account_id = ${p.accountId} AND id = ${p.id}`
      : await db`UPDATE schedules SET paused = ${p.paused}, next_schedule_time = ${p.nextScheduleTime}
          WHERE account_id = ${p.accountId} AND id = ${p.id}`;
  return result.count > 0;
}

/**
 * Unlike SQLite (one writer, so the claiming transaction is alone), concurrent nodes claim at
 * the same time here: `FOR UPDATE SKIP LOCKED` gives each due row to one transaction, and a
 * node that reads the row after the owner committed sees its advanced `next_schedule_time`
 * (PostgreSQL re-checks the WHERE clause on the newest row version), so it is no longer due.
 */
export async function scheduleClaimDue(db: Db, p: ScheduleClaimDueParams): Promise<Schedule[]> {
  if (p.limit <= 0) return [];
  const rows = await db<ScheduleRow[]>`
    SELECT * FROM schedules
    WHERE NOT paused AND next_schedule_time <= ${p.now}
    ORDER BY next_schedule_time
    LIMIT ${p.limit}
    FOR UPDATE SKIP LOCKED`;
  return rows.map(scheduleFromRow);
}

export async function scheduleAdvanceMany(db: Db, p: ScheduleAdvanceManyParams): Promise<void> {
  const a = p.advances;
  if (a.length === 0) return;
  await db`
    UPDATE schedules s
    SET last_schedule_time = u.last, next_schedule_time = u.next, last_message_ids = u.ids
    FROM unnest(
      ${a.map((x) => x.accountId)}::text[],
      ${a.map((x) => x.id)}::text[],
      ${a.map((x) => x.lastScheduleTime)}::bigint[],
      ${a.map((x) => x.nextScheduleTime ?? null)}::bigint[],
      ${a.map((x) => JSON.stringify(x.lastMessageIds))}::text[]
    ) AS u(account_id, id, last, next, ids)
    WHERE s.account_id = u.account_id AND s.id = u.id`;
}

export async function scheduleNextDueAt(db: Db): Promise<number | undefined> {
  const [row] = await db<{ t: string | null }[]>`
    SELECT min(next_schedule_time) AS t FROM schedules WHERE NOT paused`;
  return row?.t == null ? undefined : Number(row.t);
}
