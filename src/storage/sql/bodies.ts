/**
 * Bodies stored once (migration 011): what both SQL drivers share about the `bodies` table.
 *
 * Which rows share a body is decided by the identity of the bytes: every message of a fan-out is
 * built with the same `Uint8Array` (the request's body), its CREATED event carries that same
 * array, and a DLQ entry or a DLQ retry carries the array the store read the message with. So
 * the first write of an array stores it under a new id, and every later write of the same array
 * references that id. A new array (a batch entry, a callback's payload, a changed body) is a new
 * body. Nothing compares contents: two publishes of equal bytes are stored twice, and bodies are
 * never shared across unrelated requests (or accounts).
 */
import { newId } from '../../core/ids.js';

/** Bodies up to this length stay inline in their rows (see migration 011 for why). */
export const INLINE_MAX_BYTES = 4096;

/**
 * The stored head of a body: what lists read (their default cut is 64 KiB, `list-page.ts`).
 * The same number is written into migration 011 and the drivers' SQL.
 */
export const HEAD_BYTES = 65_536;

/** The body id each array was stored under or read with. Weak: ids go with their arrays. */
const ids = new WeakMap<Uint8Array, string>();

/**
 * The shared body id for `bytes`, or undefined when they stay inline.
 *
 * Ids sort by creation time (`newId`), as message ids do, so a batch's new bodies and their
 * counts go to the last pages of the `bodies` and `body_refs` keys. Random ids (UUIDs, until
 * 2026-12-07) put each body on a page of its own in both, written again by every change of its
 * count: with 8 KiB bodies the storage work of a delivered message fell by about a third on
 * SQLite (docs/benchmarks-log.md, "Shared bodies under ids in time order").
 */
export function sharedBodyId(bytes: Uint8Array): string | undefined {
  if (bytes.byteLength <= INLINE_MAX_BYTES) return undefined;
  let id = ids.get(bytes);
  if (id === undefined) {
    id = newId('bdy');
    ids.set(bytes, id);
  }
  return id;
}

/** Records that `bytes` were read from the body `id`, so writing them again shares it. */
export function rememberBodyId(bytes: Uint8Array, id: string): void {
  ids.set(bytes, id);
}

/** One body to store: its id and bytes. */
export interface BodyToStore {
  id: string;
  bytes: Uint8Array;
}

/** The distinct shared bodies among `bodies` (inline ones and repeats left out). */
export function bodiesToStore(bodies: Iterable<Uint8Array | undefined>): BodyToStore[] {
  const out = new Map<string, BodyToStore>();
  for (const bytes of bodies) {
    if (bytes === undefined) continue;
    const id = sharedBodyId(bytes);
    if (id !== undefined && !out.has(id)) out.set(id, { id, bytes });
  }
  return [...out.values()];
}

/** The stored head of `bytes`, and the whole bytes when longer than the head (else null). */
export function headAndData(bytes: Uint8Array): { head: Uint8Array; data: Uint8Array | null } {
  return bytes.byteLength > HEAD_BYTES
    ? { head: bytes.subarray(0, HEAD_BYTES), data: bytes }
    : { head: bytes, data: null };
}

/** A body read back: its bytes (maybe cut) and its whole length. */
export interface LoadedBody {
  bytes: Buffer;
  size: number;
}

/** A row of a table with a `body_id`, as the drivers read it. */
interface RowWithBody {
  body_id?: string | null;
  body: Buffer | null;
  body_size?: number | string | bigint | null;
}

/** The shared body ids `rows` reference (distinct). */
export function bodyIdsOf(rows: readonly RowWithBody[]): string[] {
  const ids = new Set<string>();
  for (const row of rows) if (typeof row.body_id === 'string') ids.add(row.body_id);
  return [...ids];
}

/**
 * Puts the shared bodies `loaded` into `rows` (read without them): the whole body for a single
 * item (`cut` undefined; remembered, so that writing it again shares it), else the first `cut`
 * bytes and the whole length in `body_size`, as the lists' SQL gives for inline bodies.
 */
export function fillBodies<R extends RowWithBody>(
  rows: R[],
  cut: number | undefined,
  loaded: ReadonlyMap<string, LoadedBody>,
): R[] {
  for (const row of rows) {
    if (typeof row.body_id !== 'string') continue;
    const body = loaded.get(row.body_id);
    // Missing only if a body were freed under a row (a bug): shown as an empty body.
    row.body = body?.bytes ?? Buffer.alloc(0);
    if (cut === undefined) {
      if (body) rememberBodyId(row.body, row.body_id);
    } else {
      row.body_size = body?.size ?? 0;
    }
  }
  return rows;
}

const EMPTY = new Uint8Array(0);

/** What a row stores in its own `body` column: the bytes, or empty when they are shared. */
export function inlineBody(bytes: Uint8Array): Uint8Array {
  return sharedBodyId(bytes) === undefined ? bytes : EMPTY;
}

/** Like `inlineBody` for a nullable column (events): undefined when shared or absent. */
export function inlineOptionalBody(bytes: Uint8Array | undefined): Uint8Array | undefined {
  return bytes === undefined || sharedBodyId(bytes) !== undefined ? undefined : bytes;
}

/** The bytes a row carries itself, for sizing statements. */
export function inlineBytes(bytes: Uint8Array | undefined): number {
  return bytes === undefined || sharedBodyId(bytes) !== undefined ? 0 : bytes.byteLength;
}
