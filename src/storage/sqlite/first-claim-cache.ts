import {
  type ClaimedMessage,
  type Message,
  type MessageSpec,
  leasedMessage,
} from '../../core/types.js';
import { INLINE_MAX_BYTES } from '../sql/bodies.js';
import { blob } from './sqlite-rows.js';

/** Stands in for a kept message's spec until its claim parses the stored JSON (never read). */
const UNCLAIMED_SPEC: MessageSpec = Object.freeze({ method: 'POST', headers: {} });

/**
 * A message kept for its first claim: the claimed message it will become (built now by
 * `leasedMessage`, its body as kept; the claim sets its spec, due time and lease token) and its
 * spec as the JSON stored. Not the published message itself, whose parsed spec a claim does not
 * use and whose body, a view into a larger buffer, would keep that buffer beside the copy the
 * cache counts.
 */
export interface KeptMessage {
  message: ClaimedMessage;
  spec: string;
}

/**
 * Messages inserted due at once, kept from their insert until their first claim, so that the
 * claim need not read back the row it just found in the due index.
 *
 * Written by hand, for a measured cost: reading a claimed row back (a lookup through the id
 * index and the rowid, then decoding fifteen columns) was about half of the SQLite claim, and the
 * claim about a tenth of Ferry's main thread when the engine is behind (docs/benchmarks-log.md,
 * "The first claim of a fresh message without reading its row back").
 *
 * What makes it exact: the columns a claim reads (CLAIM_COLUMNS) never change while a row is
 * unclaimed. Only `due_at` (releases, spreading, gates) changes then, and `retried` changes only
 * under a lease, which takes a claim first, and the first claim removes the entry. The spec is
 * kept as the JSON that was stored, so a claim gets its own copy, as from the row. An entry whose
 * insert rolled back, or whose row was deleted, is never found by a claim's scan; it stays until
 * it is stale (see `add`). The cache holds at most `maxEntries` messages and `maxBytes` of bodies.
 */
export class FirstClaimCache {
  private readonly entries = new Map<string, KeptMessage>();
  private bytes = 0;

  constructor(
    private readonly maxEntries = 8_192,
    private readonly maxBytes = 16 * 1024 * 1024,
    private readonly staleMs = 10_000,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  /**
   * Keeps `message` (its stored spec JSON beside it) for its first claim. When the cache is full,
   * only entries kept for over `staleMs` (by their messages' creation times) make room: claims
   * take the earliest due first, so with a backlog the entries kept are the next ones claimed,
   * and a newer message is simply read from its row. An entry that no claim will take (its row
   * deleted, or its insert rolled back) goes once it is stale.
   */
  add(message: Message, spec: string): void {
    const bytes = message.body.byteLength;
    while (this.entries.size >= this.maxEntries || this.bytes + bytes > this.maxBytes) {
      const oldest = this.entries.values().next().value;
      if (oldest === undefined || oldest.message.createdAt > message.createdAt - this.staleMs) {
        return;
      }
      this.take(oldest.message.id);
    }
    // A small body is usually a view into a larger buffer (Node's shared 8 KiB pool slabs, a
    // request's read buffer), which keeping it would keep whole: a copy is packed with the
    // others, so the cache holds about what it counts. Larger bodies are shared bodies, stored
    // once with their own buffers, and kept as they are (their identity is their stored id).
    let body = message.body;
    if (bytes <= INLINE_MAX_BYTES && bytes < body.buffer.byteLength) body = Buffer.from(body);
    const kept = leasedMessage(message, message.dueAt, '', blob(body), UNCLAIMED_SPEC);
    this.entries.set(message.id, { message: kept, spec });
    this.bytes += bytes;
  }

  /** The message kept for `id`, removed from the cache; undefined when it is not kept. */
  take(id: string): KeptMessage | undefined {
    const entry = this.entries.get(id);
    if (entry === undefined) return undefined;
    this.entries.delete(id);
    this.bytes -= entry.message.body.byteLength;
    return entry;
  }
}
