/** Management operations: users, account settings and deletion, usage counters, search indexes. */
import type {
  ManagementUser,
  SearchIndex,
  UsageBucket,
  UsageCount,
} from '../../core/management.js';
import type { Account } from '../../core/types.js';
import type {
  AccountDeleteParams,
  AccountListParams,
  AccountUpdateParams,
  DlqCountParams,
  SearchIndexDeleteParams,
  SearchIndexGetParams,
  SearchIndexInsertParams,
  SearchIndexListParams,
  SearchIndexUpdateParams,
  UsageAddManyParams,
  UsageSumByStepParams,
  UserGetByEmailParams,
  UserInsertParams,
} from '../driver.js';
import {
  searchIndexFromRow,
  usageBucketFromRow,
  userFromRow,
  type SearchIndexRow,
  type UsageBucketRow,
  type UserRow,
} from '../sql/management-rows.js';
import { accountFromRow, type AccountRow } from '../sql/rows.js';
import { atomically, type Db } from './postgres-rows.js';

/** The present fields of a partial update, as a column → value object for `db(object)`. */
function presentFields(
  fields: Record<string, string | number | undefined>,
): Record<string, string | number> {
  const set: Record<string, string | number> = {};
  for (const [column, value] of Object.entries(fields))
    if (value !== undefined) set[column] = value;
  return set;
}

export async function accountList(db: Db, p: AccountListParams): Promise<Account[]> {
  const rows = await db<AccountRow[]>`
    SELECT * FROM accounts WHERE owner_id = ${p.ownerId} ORDER BY created_at, id`;
  return rows.map(accountFromRow);
}

export async function accountUpdate(db: Db, p: AccountUpdateParams): Promise<boolean> {
  const set = presentFields({
    plan: p.plan,
    plan_changed_at: p.planChangedAt,
    budget: p.budget,
    password_hash: p.passwordHash,
    password_sealed: p.passwordSealed,
    owner_id: p.ownerId,
  });
  if (Object.keys(set).length === 0) {
    return (await db`SELECT 1 FROM accounts WHERE id = ${p.id}`).length > 0;
  }
  const result = await db`UPDATE accounts SET ${db(set)} WHERE id = ${p.id}`;
  return result.count > 0;
}

/**
 * The deletes of one account's rows, in one transaction (a savepoint when the caller has one).
 * A claimed message's row carries its lease, so deleting the row also ends the lease: the
 * in-flight attempt's completion then matches no row (unlike SQLite's in-memory leases).
 */
export async function accountDelete(db: Db, p: AccountDeleteParams): Promise<boolean> {
  const run = async (tx: Db): Promise<boolean> => {
    await tx`DELETE FROM messages WHERE account_id = ${p.id}`;
    await tx`DELETE FROM events WHERE account_id = ${p.id}`;
    await tx`DELETE FROM dlq WHERE account_id = ${p.id}`;
    await tx`DELETE FROM dedup WHERE account_id = ${p.id}`;
    await tx`DELETE FROM flow_gates WHERE account_id = ${p.id}`;
    await tx`DELETE FROM usage_counters WHERE subject_id = ${p.id}`;
    await tx`DELETE FROM rate_counters WHERE subject_id = ${p.id}`;
    return (await tx`DELETE FROM accounts WHERE id = ${p.id}`).count > 0;
  };
  return atomically(db, run);
}

export async function userInsert(db: Db, { user: u }: UserInsertParams): Promise<void> {
  await db`
    INSERT INTO mgmt_users (id, email, api_key_hash, admin, created_at)
    VALUES (${u.id}, ${u.email}, ${u.apiKeyHash}, ${u.admin}, ${u.createdAt})`;
}

export async function userGetByEmail(
  db: Db,
  p: UserGetByEmailParams,
): Promise<ManagementUser | undefined> {
  const [row] = await db<UserRow[]>`SELECT * FROM mgmt_users WHERE email = ${p.email}`;
  return row && userFromRow(row);
}

/** Counts of the same key summed, in key order. */
function mergeCounts(counts: readonly UsageCount[]): UsageCount[] {
  const merged = new Map<string, UsageCount>();
  for (const c of counts) {
    const key = `${c.subjectId}\0${c.minute}\0${c.metric}`;
    const seen = merged.get(key);
    if (seen) seen.value += c.value;
    else merged.set(key, { ...c });
  }
  return [...merged.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, c]) => c);
}

/**
 * One UPSERT for the whole batch. Unlike SQLite, which applies the rows one by one, a single
 * PostgreSQL statement may not touch a row twice (`ON CONFLICT DO UPDATE command cannot affect
 * row a second time`), so counts of the same key are summed first; sorting them makes concurrent
 * flushes of several nodes lock rows in the same order, so they cannot deadlock.
 */
export async function usageAddMany(db: Db, p: UsageAddManyParams): Promise<void> {
  const counts = mergeCounts(p.counts);
  if (counts.length === 0) return;
  await db`
    INSERT INTO usage_counters (subject_id, minute, metric, value)
    SELECT * FROM unnest(
      ${counts.map((c) => c.subjectId)}::text[], ${counts.map((c) => c.minute)}::bigint[],
      ${counts.map((c) => c.metric)}::text[], ${counts.map((c) => c.value)}::bigint[])
    ON CONFLICT (subject_id, minute, metric)
    DO UPDATE SET value = usage_counters.value + EXCLUDED.value`;
}

export async function usageSumByStep(db: Db, p: UsageSumByStepParams): Promise<UsageBucket[]> {
  const metrics = p.metrics ?? [];
  const rows = await db<UsageBucketRow[]>`
    SELECT (minute - ${p.from}::bigint) / ${p.stepMs}::bigint AS bucket, metric,
           SUM(value) AS value
    FROM usage_counters
    WHERE subject_id = ${p.subjectId} AND minute >= ${p.from} AND minute < ${p.to}
      ${metrics.length > 0 ? db`AND metric = ANY(${metrics}::text[])` : db``}
    GROUP BY bucket, metric
    ORDER BY bucket, metric`;
  return rows.map(usageBucketFromRow);
}

export async function searchIndexInsert(
  db: Db,
  { index: i }: SearchIndexInsertParams,
): Promise<void> {
  await db`
    INSERT INTO search_indexes
      (id, owner_id, name, endpoint, type, region, token_hash, read_only_token_hash, created_at,
       token_sealed, read_only_token_sealed)
    VALUES
      (${i.id}, ${i.ownerId}, ${i.name}, ${i.endpoint}, ${i.type}, ${i.region}, ${i.tokenHash},
       ${i.readOnlyTokenHash}, ${i.createdAt}, ${i.tokenSealed ?? null},
       ${i.readOnlyTokenSealed ?? null})`;
}

export async function searchIndexGet(
  db: Db,
  p: SearchIndexGetParams,
): Promise<SearchIndex | undefined> {
  const [row] = await db<SearchIndexRow[]>`
    SELECT * FROM search_indexes WHERE id = ${p.id} AND owner_id = ${p.ownerId}`;
  return row && searchIndexFromRow(row);
}

export async function searchIndexList(db: Db, p: SearchIndexListParams): Promise<SearchIndex[]> {
  const rows = await db<SearchIndexRow[]>`
    SELECT * FROM search_indexes WHERE owner_id = ${p.ownerId} ORDER BY created_at, id`;
  return rows.map(searchIndexFromRow);
}

export async function searchIndexDelete(db: Db, p: SearchIndexDeleteParams): Promise<boolean> {
  const run = async (tx: Db): Promise<boolean> => {
    const result = await tx`
      DELETE FROM search_indexes WHERE id = ${p.id} AND owner_id = ${p.ownerId}`;
    if (result.count === 0) return false;
    await tx`DELETE FROM usage_counters WHERE subject_id = ${p.id}`;
    await tx`DELETE FROM rate_counters WHERE subject_id = ${p.id}`;
    return true;
  };
  return atomically(db, run);
}

export async function searchIndexUpdate(db: Db, p: SearchIndexUpdateParams): Promise<boolean> {
  const set = presentFields({
    name: p.name,
    token_hash: p.tokenHash,
    read_only_token_hash: p.readOnlyTokenHash,
    token_sealed: p.tokenSealed,
    read_only_token_sealed: p.readOnlyTokenSealed,
  });
  if (Object.keys(set).length === 0) return (await searchIndexGet(db, p)) !== undefined;
  const result = await db`
    UPDATE search_indexes SET ${db(set)} WHERE id = ${p.id} AND owner_id = ${p.ownerId}`;
  return result.count > 0;
}

export async function dlqCount(db: Db, p: DlqCountParams): Promise<number> {
  const [row] = await db<{ n: string }[]>`
    SELECT COUNT(*) AS n FROM dlq WHERE account_id = ${p.accountId}`;
  return Number(row?.n ?? 0);
}
