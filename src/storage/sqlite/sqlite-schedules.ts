/**
 * Schedule operations on the SQLite connection, synchronous (wrapped by `sqlite-executor.ts`).
 *
 * Unlike PostgreSQL, no row locks or advisory locks are needed: one connection serves the
 * process and every write transaction holds the database's write lock (`BEGIN IMMEDIATE`), so
 * a claim, the messages it produces and the advance are serialized with every other writer.
 */
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
import type { SqliteStatements } from './sqlite-statements.js';

const INSERT = `INSERT INTO schedules (${SCHEDULE_COLUMNS.join(', ')}) VALUES (${SCHEDULE_COLUMNS.map(() => '?').join(', ')})`;

/** better-sqlite3 binds neither booleans nor plain Uint8Arrays: 0/1 and a Buffer view instead. */
function bindable(value: string | number | boolean | Uint8Array | null): unknown {
  if (typeof value === 'boolean') return value ? 1 : 0;
  if (value instanceof Uint8Array && !Buffer.isBuffer(value)) {
    return Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  }
  return value;
}

export class SqliteScheduleOps {
  constructor(private readonly statements: SqliteStatements) {}

  scheduleUpsert({ schedule, maxSchedules }: ScheduleUpsertParams): ScheduleUpsertResult {
    const st = this.statements;
    return st.atomic(() => {
      const replaced =
        st
          .get('DELETE FROM schedules WHERE account_id = ? AND id = ?')
          .run(schedule.accountId, schedule.id).changes > 0;
      if (!replaced) {
        const count = st
          .get('SELECT count(*) AS n FROM schedules WHERE account_id = ?')
          .get(schedule.accountId) as { n: number };
        if (count.n >= maxSchedules) return 'limit';
      }
      st.get(INSERT).run(...scheduleValues(schedule).map(bindable));
      return replaced ? 'replaced' : 'created';
    });
  }

  scheduleGet({ accountId, id }: ScheduleGetParams): Schedule | undefined {
    const row = this.statements
      .get('SELECT * FROM schedules WHERE account_id = ? AND id = ?')
      .get(accountId, id) as ScheduleRow | undefined;
    return row && scheduleFromRow(row);
  }

  scheduleList({ accountId, bodyCut }: ScheduleListParams): Schedule[] {
    const rows = this.statements
      .get(
        `SELECT ${scheduleListColumns('?')} FROM schedules WHERE account_id = ? ` +
          'ORDER BY created_at, id',
      )
      .all(bodyCut ?? 2_147_483_647, accountId) as ScheduleRow[];
    return rows.map(scheduleFromRow);
  }

  scheduleDelete({ accountId, id }: ScheduleDeleteParams): boolean {
    return (
      this.statements
        .get('DELETE FROM schedules WHERE account_id = ? AND id = ?')
        .run(accountId, id).changes > 0
    );
  }

  scheduleSetPaused(p: ScheduleSetPausedParams): boolean {
    const paused = p.paused ? 1 : 0;
    const result =
      p.nextScheduleTime === undefined
        ? this.statements
            .get('UPDATE schedules SET paused = ? WHERE account_id = ? AND id = ?')
            .run(paused, p.accountId, p.id)
        : this.statements
            .get(
              'UPDATE schedules SET paused = ?, next_schedule_time = ? WHERE account_id = ? AND id = ?',
            )
            .run(paused, p.nextScheduleTime, p.accountId, p.id);
    return result.changes > 0;
  }

  scheduleClaimDue({ now, limit }: ScheduleClaimDueParams): Schedule[] {
    if (limit <= 0) return [];
    const rows = this.statements
      .get(
        'SELECT * FROM schedules WHERE paused = 0 AND next_schedule_time <= ? ' +
          'ORDER BY next_schedule_time LIMIT ?',
      )
      .all(now, limit) as ScheduleRow[];
    return rows.map(scheduleFromRow);
  }

  scheduleAdvanceMany({ advances }: ScheduleAdvanceManyParams): void {
    if (advances.length === 0) return;
    const st = this.statements;
    st.atomic(() => {
      const update = st.get(
        'UPDATE schedules SET last_schedule_time = ?, next_schedule_time = ?, ' +
          'last_message_ids = ? WHERE account_id = ? AND id = ?',
      );
      for (const a of advances) {
        update.run(
          a.lastScheduleTime,
          a.nextScheduleTime ?? null,
          JSON.stringify(a.lastMessageIds),
          a.accountId,
          a.id,
        );
      }
    });
  }

  scheduleNextDueAt(): number | undefined {
    const row = this.statements
      .get('SELECT min(next_schedule_time) AS t FROM schedules WHERE paused = 0')
      .get() as { t: number | null };
    return row.t ?? undefined;
  }
}
