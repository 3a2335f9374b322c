/**
 * Row mapping for the PostgreSQL driver. The row shapes and mappers are shared with SQLite
 * (`../sql/rows.ts`, where the BIGINT-as-string difference is handled); this module adds the
 * connection type and the claimed-message mapping.
 */
import type postgres from 'postgres';
import { type ClaimedMessage, leasedMessage } from '../../core/types.js';
import { messageFromRow, type MessageRow } from '../sql/rows.js';

/** Either the pool or a transaction (or savepoint) connection: both run the same queries. */
export type Db = postgres.Sql | postgres.TransactionSql;

/**
 * Runs `fn` in a transaction of its own on the pool, or as part of the caller's transaction.
 * No savepoint: on PostgreSQL an error aborts the whole transaction anyway, the callers let it
 * propagate, and SAVEPOINT and RELEASE are two round trips (paid on hot paths).
 */
export async function transactional<T>(db: Db, fn: (tx: Db) => Promise<T>): Promise<T> {
  if ('savepoint' in db) return fn(db);
  // Wrapped: postgres.js would treat an array returned by `fn` as a list of queries.
  return (await db.begin(async (tx) => ({ value: await fn(tx) }))).value;
}

/**
 * Runs `fn` atomically: in a savepoint inside a transaction (if it throws, only its own writes
 * are undone), else in a transaction of its own.
 */
export async function atomically<T>(db: Db, fn: (tx: Db) => Promise<T>): Promise<T> {
  const run = async (tx: Db): Promise<{ value: T }> => ({ value: await fn(tx) });
  return ('savepoint' in db ? await db.savepoint(run) : await db.begin(run)).value;
}

/** The `bytea` type oid: `sql.array(buffers, BYTEA_OID)` binds a `bytea[]` parameter. */
export const BYTEA_OID = 17;

export function toClaimedMessage(row: MessageRow): ClaimedMessage {
  if (row.lease_token === null) throw new Error(`claimed message ${row.id} has no lease token`);
  const message = messageFromRow(row);
  return leasedMessage(message, message.dueAt, row.lease_token);
}
