/**
 * The `bodies` table on SQLite (migration 011; see `../sql/bodies.ts`): store a shared body
 * before the rows that reference it, read heads for lists and whole bodies for single items,
 * and delete bodies nothing references any more.
 */
import type { BodyUsage } from '../driver.js';
import { type BodyToStore, HEAD_BYTES, headAndData, type LoadedBody } from '../sql/bodies.js';
import type { SqliteStatements } from './sqlite-statements.js';

/** A Uint8Array as better-sqlite3 binds it: a Buffer view over the same bytes (no copy). */
const blob = (bytes: Uint8Array): Buffer =>
  Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);

const EXISTS = 'SELECT 1 AS found FROM body_refs WHERE body_id = ?';
const INSERT_BODY = 'INSERT INTO bodies (id, size, head, data) VALUES (?, ?, ?, ?)';
const INSERT_REFS = 'INSERT INTO body_refs (body_id, refs) VALUES (?, 0)';
// The CASE reads `data` only when the cut reaches past the head: SQLite loads a column's whole
// value when an expression uses it, so `substr(data, …)` of a 10 MiB body reads 10 MiB.
const LOAD_CUT =
  `SELECT size, CASE WHEN size <= ${HEAD_BYTES} OR ? <= ${HEAD_BYTES} THEN substr(head, 1, ?) ` +
  'ELSE substr(data, 1, ?) END AS bytes FROM bodies WHERE id = ?';
const LOAD_WHOLE = `SELECT size, CASE WHEN size <= ${HEAD_BYTES} THEN head ELSE data END AS bytes FROM bodies WHERE id = ?`;
const UNREFERENCED = 'SELECT body_id FROM body_refs WHERE refs <= 0 LIMIT ?';

export class SqliteBodyOps {
  constructor(private readonly statements: SqliteStatements) {}

  /**
   * Stores the bodies not stored yet, with a count of 0 (the rows' triggers count them). Runs
   * inside the caller's transaction, before its rows.
   */
  store(bodies: readonly BodyToStore[]): void {
    if (bodies.length === 0) return;
    const exists = this.statements.get(EXISTS);
    for (const { id, bytes } of bodies) {
      if (exists.get(id) !== undefined) continue;
      const { head, data } = headAndData(bytes);
      this.statements
        .get(INSERT_BODY)
        .run(id, bytes.byteLength, blob(head), data === null ? null : blob(data));
      this.statements.get(INSERT_REFS).run(id);
    }
  }

  /** The bodies `ids`, whole (`cut` undefined) or their first `cut` bytes. */
  load(ids: readonly string[], cut: number | undefined): Map<string, LoadedBody> {
    const out = new Map<string, LoadedBody>();
    const statement = this.statements.get(cut === undefined ? LOAD_WHOLE : LOAD_CUT);
    for (const id of ids) {
      const row = (cut === undefined ? statement.get(id) : statement.get(cut, cut, cut, id)) as
        { size: number; bytes: Buffer | null } | undefined;
      if (row) out.set(id, { size: row.size, bytes: row.bytes ?? Buffer.alloc(0) });
    }
    return out;
  }

  /** Deletes up to `limit` bodies that nothing references; returns how many. */
  deleteUnreferenced(limit: number): number {
    return this.statements.atomic(() => {
      const ids = this.statements.get(UNREFERENCED).all(limit) as { body_id: string }[];
      const body = this.statements.get('DELETE FROM bodies WHERE id = ?');
      const refs = this.statements.get('DELETE FROM body_refs WHERE body_id = ?');
      for (const { body_id: id } of ids) {
        body.run(id);
        refs.run(id);
      }
      return ids.length;
    });
  }

  usage(): BodyUsage {
    const row = this.statements
      .get('SELECT count(*) AS count, COALESCE(sum(size), 0) AS bytes FROM bodies')
      .get() as BodyUsage;
    return { count: row.count, bytes: row.bytes };
  }
}
