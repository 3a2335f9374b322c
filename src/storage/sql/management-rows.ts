/**
 * Row shapes and mappers of the management tables (`004_management.sql`), shared by both SQL
 * drivers like `rows.ts`. The admin flag is an INTEGER 0/1 in SQLite and a BOOLEAN in PostgreSQL.
 */
import type {
  ManagementUser,
  SearchIndex,
  SearchIndexRegion,
  SearchIndexType,
  UsageBucket,
  UsageMetric,
} from '../../core/management.js';
import type { Int8 } from './rows.js';

export interface UserRow {
  id: string;
  email: string;
  api_key_hash: string;
  admin: number | boolean;
  created_at: Int8;
}

export function userFromRow(row: UserRow): ManagementUser {
  return {
    id: row.id,
    email: row.email,
    apiKeyHash: row.api_key_hash,
    admin: row.admin === true || row.admin === 1,
    createdAt: Number(row.created_at),
  };
}

export interface SearchIndexRow {
  id: string;
  owner_id: string;
  name: string;
  endpoint: string;
  type: string;
  region: string;
  token_hash: string;
  read_only_token_hash: string;
  token_sealed: string | null;
  read_only_token_sealed: string | null;
  created_at: Int8;
}

export const SEARCH_INDEX_COLUMNS =
  'id, owner_id, name, endpoint, type, region, token_hash, read_only_token_hash, created_at, ' +
  'token_sealed, read_only_token_sealed';

export function searchIndexParams(i: SearchIndex): (string | number | null)[] {
  return [
    i.id,
    i.ownerId,
    i.name,
    i.endpoint,
    i.type,
    i.region,
    i.tokenHash,
    i.readOnlyTokenHash,
    i.createdAt,
    i.tokenSealed ?? null,
    i.readOnlyTokenSealed ?? null,
  ];
}

export function searchIndexFromRow(row: SearchIndexRow): SearchIndex {
  const index: SearchIndex = {
    id: row.id,
    ownerId: row.owner_id,
    name: row.name,
    endpoint: row.endpoint,
    type: row.type as SearchIndexType,
    region: row.region as SearchIndexRegion,
    tokenHash: row.token_hash,
    readOnlyTokenHash: row.read_only_token_hash,
    createdAt: Number(row.created_at),
  };
  if (row.token_sealed !== null) index.tokenSealed = row.token_sealed;
  if (row.read_only_token_sealed !== null) index.readOnlyTokenSealed = row.read_only_token_sealed;
  return index;
}

export interface UsageBucketRow {
  bucket: Int8;
  metric: string;
  value: Int8;
}

export function usageBucketFromRow(row: UsageBucketRow): UsageBucket {
  return {
    bucket: Number(row.bucket),
    metric: row.metric as UsageMetric,
    value: Number(row.value),
  };
}

/**
 * The SET clause of a partial update: `column = <placeholder>` for each present field, in order.
 * `bind` returns the dialect's placeholder for a value (`?` or `$n`).
 */
export function updateSet(
  fields: [column: string, value: string | number | undefined][],
  bind: (value: string | number) => string,
): string {
  return fields
    .filter(([, value]) => value !== undefined)
    .map(([column, value]) => `${column} = ${bind(value as string | number)}`)
    .join(', ');
}
