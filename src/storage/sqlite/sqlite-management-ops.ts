/**
 * The management operations of the SQLite driver (users, account settings and deletion, usage
 * counters, search indexes), synchronous like `sqlite-ops.ts`, on the same connection.
 */
import type { ManagementUser, SearchIndex, UsageBucket } from '../../core/management.js';
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
  SEARCH_INDEX_COLUMNS,
  searchIndexFromRow,
  searchIndexParams,
  updateSet,
  usageBucketFromRow,
  userFromRow,
  type SearchIndexRow,
  type UsageBucketRow,
  type UserRow,
} from '../sql/management-rows.js';
import { accountFromRow, type AccountRow } from '../sql/rows.js';
import type { LeaseTable } from './lease-table.js';
import { ACCOUNT_COLUMNS } from './sqlite-rows.js';
import type { SqliteStatements } from './sqlite-statements.js';

const placeholder = (): string => '?';

export class SqliteManagementOps {
  constructor(
    private readonly statements: SqliteStatements,
    private readonly leases: LeaseTable,
  ) {}

  accountList({ ownerId }: AccountListParams): Account[] {
    const rows = this.statements
      .get(`SELECT ${ACCOUNT_COLUMNS} FROM accounts WHERE owner_id = ? ORDER BY created_at, id`)
      .all(ownerId) as AccountRow[];
    return rows.map(accountFromRow);
  }

  accountUpdate(p: AccountUpdateParams): boolean {
    const fields: [string, string | number | undefined][] = [
      ['plan', p.plan],
      ['plan_changed_at', p.planChangedAt],
      ['budget', p.budget],
      ['password_hash', p.passwordHash],
      ['password_sealed', p.passwordSealed],
      ['owner_id', p.ownerId],
    ];
    const set = updateSet(fields, placeholder);
    if (set === '')
      return this.statements.get('SELECT 1 FROM accounts WHERE id = ?').get(p.id) !== undefined;
    const values = fields.flatMap(([, v]) => (v === undefined ? [] : [v]));
    return (
      this.statements.getDynamic(`UPDATE accounts SET ${set} WHERE id = ?`).run(...values, p.id)
        .changes > 0
    );
  }

  accountDelete({ id }: AccountDeleteParams): boolean {
    return this.statements.atomic(() => {
      const removed = this.statements
        .get('DELETE FROM messages WHERE account_id = ? RETURNING id')
        .all(id) as { id: string }[];
      // Leases live in memory here (see lease-table.ts); unlike PostgreSQL, where the row carries
      // its lease, a deleted row's lease must be dropped too, or its completion would still apply.
      for (const row of removed) this.leases.delete(row.id);
      for (const table of ['events', 'dlq', 'dedup', 'flow_gates']) {
        this.statements.get(`DELETE FROM ${table} WHERE account_id = ?`).run(id);
      }
      this.statements.get('DELETE FROM usage_counters WHERE subject_id = ?').run(id);
      return this.statements.get('DELETE FROM accounts WHERE id = ?').run(id).changes > 0;
    });
  }

  userInsert({ user: u }: UserInsertParams): void {
    this.statements
      .get(
        'INSERT INTO mgmt_users (id, email, api_key_hash, admin, created_at) VALUES (?, ?, ?, ?, ?)',
      )
      .run(u.id, u.email, u.apiKeyHash, u.admin ? 1 : 0, u.createdAt);
  }

  userGetByEmail({ email }: UserGetByEmailParams): ManagementUser | undefined {
    const row = this.statements.get('SELECT * FROM mgmt_users WHERE email = ?').get(email);
    return row === undefined ? undefined : userFromRow(row as UserRow);
  }

  usageAddMany({ counts }: UsageAddManyParams): void {
    if (counts.length === 0) return;
    this.statements.atomic(() => {
      const add = this.statements.get(
        'INSERT INTO usage_counters (subject_id, minute, metric, value) VALUES (?, ?, ?, ?) ' +
          'ON CONFLICT (subject_id, minute, metric) DO UPDATE SET value = value + excluded.value',
      );
      for (const c of counts) add.run(c.subjectId, c.minute, c.metric, c.value);
    });
  }

  usageSumByStep(p: UsageSumByStepParams): UsageBucket[] {
    const metrics = p.metrics ?? [];
    const only =
      metrics.length === 0 ? '' : ` AND metric IN (${metrics.map(placeholder).join(', ')})`;
    // Integer division: both operands are INTEGER, so `/` truncates (as it does for BIGINT in
    // PostgreSQL), and `minute - from` is never negative here.
    const rows = this.statements
      .getDynamic(
        'SELECT (minute - CAST(? AS INTEGER)) / CAST(? AS INTEGER) AS bucket, metric, SUM(value) AS value FROM usage_counters ' +
          `WHERE subject_id = ? AND minute >= ? AND minute < ?${only} ` +
          'GROUP BY bucket, metric ORDER BY bucket, metric',
      )
      .all(p.from, p.stepMs, p.subjectId, p.from, p.to, ...metrics) as UsageBucketRow[];
    return rows.map(usageBucketFromRow);
  }

  searchIndexInsert({ index }: SearchIndexInsertParams): void {
    this.statements
      .get(
        `INSERT INTO search_indexes (${SEARCH_INDEX_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(...searchIndexParams(index));
  }

  searchIndexGet({ ownerId, id }: SearchIndexGetParams): SearchIndex | undefined {
    const row = this.statements
      .get(`SELECT ${SEARCH_INDEX_COLUMNS} FROM search_indexes WHERE id = ? AND owner_id = ?`)
      .get(id, ownerId);
    return row === undefined ? undefined : searchIndexFromRow(row as SearchIndexRow);
  }

  searchIndexList({ ownerId }: SearchIndexListParams): SearchIndex[] {
    const rows = this.statements
      .get(
        `SELECT ${SEARCH_INDEX_COLUMNS} FROM search_indexes WHERE owner_id = ? ORDER BY created_at, id`,
      )
      .all(ownerId) as SearchIndexRow[];
    return rows.map(searchIndexFromRow);
  }

  searchIndexDelete({ ownerId, id }: SearchIndexDeleteParams): boolean {
    return this.statements.atomic(() => {
      const deleted =
        this.statements
          .get('DELETE FROM search_indexes WHERE id = ? AND owner_id = ?')
          .run(id, ownerId).changes > 0;
      if (deleted) this.statements.get('DELETE FROM usage_counters WHERE subject_id = ?').run(id);
      return deleted;
    });
  }

  searchIndexUpdate(p: SearchIndexUpdateParams): boolean {
    const fields: [string, string | number | undefined][] = [
      ['name', p.name],
      ['token_hash', p.tokenHash],
      ['read_only_token_hash', p.readOnlyTokenHash],
      ['token_sealed', p.tokenSealed],
      ['read_only_token_sealed', p.readOnlyTokenSealed],
    ];
    const set = updateSet(fields, placeholder);
    if (set === '') return this.searchIndexGet(p) !== undefined;
    const values = fields.flatMap(([, v]) => (v === undefined ? [] : [v]));
    return (
      this.statements
        .getDynamic(`UPDATE search_indexes SET ${set} WHERE id = ? AND owner_id = ?`)
        .run(...values, p.id, p.ownerId).changes > 0
    );
  }

  dlqCount({ accountId }: DlqCountParams): number {
    const row = this.statements
      .get('SELECT COUNT(*) AS n FROM dlq WHERE account_id = ?')
      .get(accountId) as { n: number };
    return row.n;
  }
}
