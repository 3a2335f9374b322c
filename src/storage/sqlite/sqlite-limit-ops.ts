/**
 * The account-limit operations of the SQLite driver: DLQ eviction (max_dlq_size) on the shared
 * connection, and the request counter of max_requests_per_second in memory.
 */
import { addToWindow, type WindowCount } from '../../core/rate-limits.js';
import type { DlqEntry } from '../../core/types.js';
import type {
  DlqEvictOldestParams,
  RateCounterIncrementParams,
  RateCounterIncrementResult,
} from '../driver.js';
import { dlqFromRow, type DlqRow } from '../sql/rows.js';
import type { SqliteStatements } from './sqlite-statements.js';

/** Forget counters of subjects not seen for this long (a window is one second). */
const STALE_COUNTER_MS = 60_000;

export class SqliteLimitOps {
  /**
   * Unlike PostgreSQL, where nodes share a `rate_counters` row per account, the counter lives in
   * memory: one process owns a SQLite database, so every request of it sees this map, and a
   * write (an fsync with synchronous=FULL) per request would cost more than the request.
   */
  private readonly counters = new Map<string, WindowCount>();

  constructor(
    private readonly statements: SqliteStatements,
    /** Puts the shared bodies into rows (SqliteOps.withBodies). */
    private readonly withBodies: (rows: DlqRow[]) => DlqRow[],
  ) {}

  /** The size comes from `dlq_sizes` (kept by triggers, migration 006), not from a count. */
  dlqEvictOldest({ accountId, maxSize }: DlqEvictOldestParams): DlqEntry[] {
    const size = this.statements
      .get('SELECT size FROM dlq_sizes WHERE account_id = ?')
      .get(accountId) as { size: number } | undefined;
    const excess = (size?.size ?? 0) - maxSize;
    if (excess <= 0) return [];
    const rows = this.statements
      .get(
        'DELETE FROM dlq WHERE dlq_id IN (SELECT dlq_id FROM dlq WHERE account_id = ? ' +
          'ORDER BY dlq_id LIMIT ?) RETURNING *',
      )
      .all(accountId, excess) as DlqRow[];
    return this.withBodies(rows)
      .map(dlqFromRow)
      .sort((a, b) => (a.dlqId < b.dlqId ? -1 : 1));
  }

  rateCounterIncrement(p: RateCounterIncrementParams): RateCounterIncrementResult {
    const next = addToWindow(this.counters.get(p.subjectId), p.windowStart, p.by);
    this.counters.set(p.subjectId, next);
    if (this.counters.size > 10_000) this.dropStale(p.windowStart);
    return next;
  }

  private dropStale(now: number): void {
    for (const [subject, counter] of this.counters) {
      if (counter.windowStart < now - STALE_COUNTER_MS) this.counters.delete(subject);
    }
  }
}
