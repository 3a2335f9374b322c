/**
 * Counts for the `/metrics` gauges: every account's messages by state, each count bounded (a
 * `LIMIT` inside, so a large backlog costs at most `limit` index entries per count), and the
 * DLQ size from the sizes its triggers keep (migration 006).
 */
import { PARKED_DUE_AT } from '../../core/flow-control.js';
import type { MessageCountByStateParams, MessageCounts } from '../driver.js';
import type { Db } from './postgres-rows.js';

/**
 * A leased row's `due_at` is its lease expiry (> now while the lease lives) and a waiting row's
 * is PARKED_DUE_AT, so `due_at <= now` is exactly "due and not in flight", expired leases
 * included, read from the due index. The in-flight count reads the partial index of leased rows
 * (migration 009). The four counts go out together, pipelined on the pool.
 */
export async function messageCountByState(
  db: Db,
  { now, limit, accountId }: MessageCountByStateParams,
): Promise<MessageCounts> {
  // postgres.js fragments: no account condition, or this account's rows only.
  const scope = accountId === undefined ? db`TRUE` : db`account_id = ${accountId}`;
  const count = async (rows: Promise<{ n: number }[]>): Promise<number> => (await rows)[0]?.n ?? 0;
  const [due, delayed, waiting, inFlight] = await Promise.all([
    count(db<{ n: number }[]>`
      SELECT count(*)::int AS n FROM (
        SELECT 1 FROM messages WHERE ${scope} AND due_at <= ${now} LIMIT ${limit}) m`),
    count(db<{ n: number }[]>`
      SELECT count(*)::int AS n FROM (
        SELECT 1 FROM messages WHERE ${scope} AND due_at > ${now} AND due_at < ${PARKED_DUE_AT}
          AND lease_token IS NULL LIMIT ${limit}) m`),
    count(db<{ n: number }[]>`
      SELECT count(*)::int AS n FROM (
        SELECT 1 FROM messages WHERE ${scope} AND wait_due_at IS NOT NULL LIMIT ${limit}) m`),
    count(db<{ n: number }[]>`
      SELECT count(*)::int AS n FROM (
        SELECT 1 FROM messages WHERE ${scope} AND lease_token IS NOT NULL AND due_at > ${now}
          LIMIT ${limit}) m`),
  ]);
  return { due, delayed, waiting, inFlight };
}

/** Runs in the workflow DLQ, at most `limit`: index entries of `workflow_runs_dlq` (migration 007). */
export async function workflowDlqCount(
  db: Db,
  p: { accountId?: string; limit: number },
): Promise<number> {
  const scope = p.accountId === undefined ? db`` : db`account_id = ${p.accountId} AND`;
  const [row] = await db<{ n: number }[]>`
    SELECT count(*)::int AS n FROM (
      SELECT 1 FROM workflow_runs WHERE ${scope} dlq_id IS NOT NULL LIMIT ${p.limit}) r`;
  return row?.n ?? 0;
}

/** One row per account with a DLQ, kept by triggers: no count of the DLQ table. */
export async function dlqCountAll(db: Db): Promise<number> {
  const [row] = await db<{ n: number }[]>`SELECT COALESCE(sum(size), 0)::int AS n FROM dlq_sizes`;
  return row?.n ?? 0;
}
