/**
 * The request counter of max_requests_per_second, shared by every node: one row per account
 * with its current one-second window. The arithmetic is `addToWindow` (core/rate-limits.ts) in
 * one UPSERT, so concurrent increments from any node serialize on the row and none is lost.
 */
import type { RateCounterIncrementParams, RateCounterIncrementResult } from '../driver.js';
import type { Db } from './postgres-rows.js';

export async function rateCounterIncrement(
  db: Db,
  p: RateCounterIncrementParams,
): Promise<RateCounterIncrementResult> {
  const [row] = await db<{ window_start: string; count: string }[]>`
    INSERT INTO rate_counters AS c (subject_id, window_start, count)
    VALUES (${p.subjectId}, ${p.windowStart}, ${p.by})
    ON CONFLICT (subject_id) DO UPDATE SET
      count = CASE WHEN EXCLUDED.window_start > c.window_start
                   THEN EXCLUDED.count ELSE c.count + EXCLUDED.count END,
      window_start = GREATEST(c.window_start, EXCLUDED.window_start)
    RETURNING window_start, count`;
  if (!row) throw new Error('rate counter upsert returned no row');
  return { windowStart: Number(row.window_start), count: Number(row.count) };
}
