/** Deduplication keys. */
import type { DedupClaimParams, DedupClaimResult, DedupDeleteExpiredParams } from '../driver.js';
import type { Db } from './postgres-rows.js';

/**
 * Takes the key when it is free or expired, in one statement: the conflicting row's update is
 * guarded by `expires_at <= now`, so an unexpired owner is left alone and nothing is returned.
 * Then the owner is read. If it vanished in between (the pruner deleted it as expired), the key
 * is free again and the claim is retried; two tries always suffice unless a pruner and another
 * claimer keep racing us, hence the small bound.
 */
export async function dedupClaim(db: Db, p: DedupClaimParams): Promise<DedupClaimResult> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const [taken] = await db<{ message_id: string }[]>`
      INSERT INTO dedup (account_id, key, message_id, expires_at)
      VALUES (${p.accountId}, ${p.key}, ${p.messageId}, ${p.expiresAt})
      ON CONFLICT (account_id, key) DO UPDATE
        SET message_id = EXCLUDED.message_id, expires_at = EXCLUDED.expires_at
        WHERE dedup.expires_at <= ${p.now}
      RETURNING message_id`;
    if (taken) return { messageId: taken.message_id, duplicate: false };
    const [owner] = await db<{ message_id: string }[]>`
      SELECT message_id FROM dedup WHERE account_id = ${p.accountId} AND key = ${p.key}`;
    if (owner) return { messageId: owner.message_id, duplicate: true };
  }
  throw new Error(`deduplication key ${p.key} kept changing owner; try again`);
}

export async function dedupDeleteExpired(db: Db, p: DedupDeleteExpiredParams): Promise<number> {
  if (p.limit <= 0) return 0;
  // A key subselect because DELETE has no LIMIT (and ctid is not portable to distributed
  // Postgres-compatible engines).
  const result = await db`
    DELETE FROM dedup WHERE (account_id, key) IN (
      SELECT account_id, key FROM dedup WHERE expires_at <= ${p.now} LIMIT ${p.limit}
    )`;
  return result.count;
}
