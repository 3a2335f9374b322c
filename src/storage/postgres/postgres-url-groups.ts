/** URL groups: one row per group, endpoints and default headers as JSON text. */
import type { UrlGroup } from '../../core/types.js';
import type {
  UrlGroupCountParams,
  UrlGroupDeleteParams,
  UrlGroupGetParams,
  UrlGroupListParams,
  UrlGroupLockParams,
  UrlGroupPutParams,
} from '../driver.js';
import { type UrlGroupRow, urlGroupFromRow, urlGroupJson } from '../sql/rows.js';
import type { Db } from './postgres-rows.js';

/**
 * A transaction-scoped advisory lock on the account's URL groups (released at COMMIT/ROLLBACK).
 * The key is a 64-bit hash of a namespaced text, so it does not collide with the migration lock.
 */
export async function urlGroupLock(db: Db, p: UrlGroupLockParams): Promise<void> {
  await db`SELECT pg_advisory_xact_lock(hashtextextended(${`ferry:url_groups:${p.accountId}`}, 0))`;
}

export async function urlGroupGet(db: Db, p: UrlGroupGetParams): Promise<UrlGroup | undefined> {
  const [row] = await db<UrlGroupRow[]>`
    SELECT * FROM url_groups WHERE account_id = ${p.accountId} AND name = ${p.name}`;
  return row && urlGroupFromRow(row);
}

export async function urlGroupList(db: Db, p: UrlGroupListParams): Promise<UrlGroup[]> {
  // COLLATE "C": byte order, as SQLite sorts, whatever the database's locale.
  const rows = await db<UrlGroupRow[]>`
    SELECT * FROM url_groups WHERE account_id = ${p.accountId} ORDER BY name COLLATE "C"`;
  return rows.map(urlGroupFromRow);
}

export async function urlGroupCount(db: Db, p: UrlGroupCountParams): Promise<number> {
  const [row] = await db<{ n: string }[]>`
    SELECT count(*) AS n FROM url_groups WHERE account_id = ${p.accountId}`;
  return Number(row?.n ?? 0);
}

export async function urlGroupPut(db: Db, { group: g }: UrlGroupPutParams): Promise<void> {
  const [endpoints, headers] = urlGroupJson(g);
  await db`
    INSERT INTO url_groups (account_id, name, created_at, updated_at, endpoints, headers)
    VALUES (${g.accountId}, ${g.name}, ${g.createdAt}, ${g.updatedAt}, ${endpoints}, ${headers})
    ON CONFLICT (account_id, name) DO UPDATE SET
      created_at = excluded.created_at, updated_at = excluded.updated_at,
      endpoints = excluded.endpoints, headers = excluded.headers`;
}

export async function urlGroupDelete(db: Db, p: UrlGroupDeleteParams): Promise<boolean> {
  const result = await db`
    DELETE FROM url_groups WHERE account_id = ${p.accountId} AND name = ${p.name}`;
  return result.count > 0;
}
