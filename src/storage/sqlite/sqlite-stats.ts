/**
 * Counts for the `/metrics` gauges on SQLite: every account's messages by state, each count
 * bounded (a `LIMIT` inside, so a large backlog costs at most `limit` index entries per count),
 * and the DLQ size from the sizes its triggers keep (migration 006).
 */
import { PARKED_DUE_AT } from '../../core/flow-control.js';
import type { MessageCountByStateParams, MessageCounts } from '../driver.js';
import type { LeaseTable } from './lease-table.js';
import type { SqliteStatements } from './sqlite-statements.js';

export class SqliteStatsOps {
  constructor(
    private readonly statements: SqliteStatements,
    private readonly leases: LeaseTable,
  ) {}

  private bounded(accountId: string | undefined, where: string, ...params: number[]): number {
    const scoped = accountId === undefined ? where : `account_id = ? AND ${where}`;
    const row = this.statements
      .get(`SELECT count(*) AS n FROM (SELECT 1 FROM messages WHERE ${scoped} LIMIT ?)`)
      .get(...(accountId === undefined ? params : [accountId, ...params])) as { n: number };
    return row.n;
  }

  /** The live leases, or those of one account's messages. */
  private inFlight(now: number, accountId: string | undefined): number {
    const live = [...this.leases.liveIds(now)];
    if (accountId === undefined) return live.length;
    const accountOf = this.statements.get('SELECT account_id FROM messages WHERE id = ?');
    return live.filter(
      (id) => (accountOf.get(id) as { account_id: string } | undefined)?.account_id === accountId,
    ).length;
  }

  /**
   * Unlike PostgreSQL, leases live in memory (`lease-table.ts`) and a leased row keeps the
   * `due_at` it was claimed at (at or before the claim), so the rows due by `now` include the
   * ones in flight: they are counted with room for them, then taken away.
   */
  messageCountByState({ now, limit, accountId }: MessageCountByStateParams): MessageCounts {
    const inFlight = this.inFlight(now, accountId);
    const dueRows = this.bounded(accountId, 'due_at <= ?', now, limit + inFlight);
    return {
      due: Math.min(limit, Math.max(0, dueRows - inFlight)),
      delayed: this.bounded(accountId, 'due_at > ? AND due_at < ?', now, PARKED_DUE_AT, limit),
      waiting: this.bounded(accountId, 'wait_due_at IS NOT NULL', limit),
      inFlight: Math.min(limit, inFlight),
    };
  }

  /** Runs in the workflow DLQ, at most `limit`: index entries of `workflow_runs_dlq` (migration 007). */
  workflowDlqCount(accountId: string | undefined, limit: number): number {
    const scope = accountId === undefined ? '' : 'account_id = ? AND ';
    const row = this.statements
      .get(
        `SELECT count(*) AS n FROM (SELECT 1 FROM workflow_runs WHERE ${scope}dlq_id IS NOT NULL LIMIT ?)`,
      )
      .get(...(accountId === undefined ? [limit] : [accountId, limit])) as { n: number };
    return row.n;
  }

  /** One row per account with a DLQ, kept by triggers: no count of the DLQ table. */
  dlqCountAll(): number {
    const row = this.statements.get('SELECT COALESCE(sum(size), 0) AS n FROM dlq_sizes').get() as {
      n: number;
    };
    return row.n;
  }
}
