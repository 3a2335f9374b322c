/**
 * Row mapping for the PostgreSQL driver. The row shapes and mappers are shared with SQLite
 * (`../sql/rows.ts`, where the BIGINT-as-string difference is handled); this module adds the
 * connection type and the claimed-message mapping.
 */
import type postgres from 'postgres';
import type { ClaimedMessage } from '../../core/types.js';
import { messageFromRow, type MessageRow } from '../sql/rows.js';

/** Either the pool or a transaction (or savepoint) connection: both run the same queries. */
export type Db = postgres.Sql | postgres.TransactionSql;

/** The `bytea` type oid: `sql.array(buffers, BYTEA_OID)` binds a `bytea[]` parameter. */
export const BYTEA_OID = 17;

export function toClaimedMessage(row: MessageRow): ClaimedMessage {
  if (row.lease_token === null) throw new Error(`claimed message ${row.id} has no lease token`);
  return { ...messageFromRow(row), leaseToken: row.lease_token };
}
