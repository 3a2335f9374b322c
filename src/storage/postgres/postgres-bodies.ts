/**
 * The `bodies` table on PostgreSQL (migration 011; see `../sql/bodies.ts`): store a shared body
 * before the rows that reference it, read heads for lists and whole bodies for single items,
 * and delete bodies nothing references any more.
 */
import type { BodyDeleteUnreferencedParams, BodyUsage } from '../driver.js';
import {
  type BodyToStore,
  bodyIdsOf,
  fillBodies,
  HEAD_BYTES,
  headAndData,
  type LoadedBody,
} from '../sql/bodies.js';
import { chunkByBytes, batchInsert } from './postgres-batch.js';
import type { Db } from './postgres-rows.js';

const insertBodies = batchInsert<BodyToStore>('bodies', [
  { name: 'id', type: 'text', value: (b) => b.id },
  { name: 'size', type: 'bigint', value: (b) => b.bytes.byteLength },
  { name: 'head', type: 'bytea', value: (b) => headAndData(b.bytes).head },
  { name: 'data', type: 'bytea', value: (b) => headAndData(b.bytes).data },
]);

/**
 * The bodies stored (or being stored) in each open transaction. The publisher issues a publish's
 * message and event inserts together (pipelined on one connection), and both carry the same
 * body: the second waits for the first's store instead of sending the bytes again.
 */
const storing = new WeakMap<Db, Map<string, Promise<void>>>();

/**
 * Stores the bodies not stored yet, with a count of 0 (the rows' triggers count them). Call it
 * on the connection that then inserts the rows, in the same transaction.
 */
export async function storeBodies(db: Db, bodies: readonly BodyToStore[]): Promise<void> {
  if (bodies.length === 0) return;
  // Only a transaction's connection outlives one statement; on the pool nothing is shared.
  let memo = 'savepoint' in db ? storing.get(db) : undefined;
  if (!memo) {
    memo = new Map();
    if ('savepoint' in db) storing.set(db, memo);
  }
  const fresh = bodies.filter((b) => !memo.has(b.id));
  if (fresh.length > 0) {
    const written = writeBodies(db, fresh);
    for (const b of fresh) memo.set(b.id, written);
  }
  const waits = new Set<Promise<void>>();
  for (const b of bodies) {
    const written = memo.get(b.id);
    if (written) waits.add(written);
  }
  await Promise.all(waits);
}

/**
 * The count rows first: the ones this inserts are the bodies not stored yet (a body read back
 * from a row, a DLQ entry's for example, is stored already and only referenced again).
 */
async function writeBodies(db: Db, bodies: readonly BodyToStore[]): Promise<void> {
  const ids = bodies.map((b) => b.id);
  const inserted = await db<{ body_id: string }[]>`
    INSERT INTO body_refs (body_id, refs) SELECT unnest(${ids}::text[]), 0
    ON CONFLICT (body_id) DO NOTHING RETURNING body_id`;
  const missing = new Set(inserted.map((r) => r.body_id));
  const rows = bodies.filter((b) => missing.has(b.id));
  for (const chunk of chunkByBytes(rows, (b) => b.bytes.byteLength)) await insertBodies(db, chunk);
}

/** The bodies `ids`, whole (`cut` undefined) or their first `cut` bytes. */
async function loadBodies(
  db: Db,
  ids: string[],
  cut: number | undefined,
): Promise<Map<string, LoadedBody>> {
  // `data` is read only when the cut reaches past the head (CASE evaluates lazily), and then
  // substring() of an EXTERNAL value fetches only the chunks it needs (migration 011).
  const rows =
    cut === undefined
      ? await db<{ id: string; size: string; bytes: Buffer }[]>`
          SELECT id, size, CASE WHEN size <= ${HEAD_BYTES} THEN head ELSE data END AS bytes
          FROM bodies WHERE id = ANY(${ids}::text[])`
      : await db<{ id: string; size: string; bytes: Buffer }[]>`
          SELECT id, size,
            CASE WHEN size <= ${HEAD_BYTES} OR ${cut}::int <= ${HEAD_BYTES}
              THEN substring(head from 1 for ${cut}::int)
              ELSE substring(data from 1 for ${cut}::int) END AS bytes
          FROM bodies WHERE id = ANY(${ids}::text[])`;
  return new Map(rows.map((r) => [r.id, { size: Number(r.size), bytes: r.bytes }]));
}

/** Puts the shared bodies into rows read without them (see `fillBodies`). */
export async function withBodies<R extends { body_id?: string | null; body: Buffer | null }>(
  db: Db,
  rows: R[],
  cut?: number,
): Promise<R[]> {
  const ids = bodyIdsOf(rows);
  return ids.length === 0 ? rows : fillBodies(rows, cut, await loadBodies(db, ids, cut));
}

/**
 * Deletes bodies whose count is 0 together with their count rows. The count rows are locked
 * (SKIP LOCKED: another pruner's are left to it) and deleted only if still at 0, so a
 * transaction taking a reference at the same moment either commits first (the count is then 1
 * and the body stays) or finds its count row gone and fails (`body_ref()` raises).
 */
export async function bodyDeleteUnreferenced(
  db: Db,
  p: BodyDeleteUnreferencedParams,
): Promise<number> {
  const rows = await db<{ id: string }[]>`
    WITH gone AS (
      DELETE FROM body_refs WHERE body_id IN (
        SELECT body_id FROM body_refs WHERE refs <= 0 LIMIT ${p.limit} FOR UPDATE SKIP LOCKED
      ) AND refs <= 0 RETURNING body_id
    )
    DELETE FROM bodies WHERE id IN (SELECT body_id FROM gone) RETURNING id`;
  return rows.length;
}

export async function bodyUsage(db: Db): Promise<BodyUsage> {
  const [row] = await db<{ count: string; bytes: string }[]>`
    SELECT count(*) AS count, COALESCE(sum(size), 0) AS bytes FROM bodies`;
  return { count: Number(row?.count ?? 0), bytes: Number(row?.bytes ?? 0) };
}
