import { randomBytes, randomFillSync } from 'node:crypto';

/**
 * Random bytes are drawn from a pool refilled 4 KiB at a time: one `randomBytes` call per id was
 * a measurable share of the publish path's CPU (every message, event and lease needs one).
 */
const POOL_SIZE = 4096;
const pool = Buffer.allocUnsafe(POOL_SIZE);
let offset = POOL_SIZE;

function random(bytes: number): Buffer {
  if (offset + bytes > POOL_SIZE) {
    randomFillSync(pool);
    offset = 0;
  }
  const slice = pool.subarray(offset, offset + bytes);
  offset += bytes;
  return slice;
}

/**
 * Ids are `<prefix>_<time><random>`: 9 base-36 digits of the creation time in ms (sorts
 * correctly until the year 5188) followed by 96 random bits in base64url, so ids are
 * unguessable and sort by creation time.
 */
export function newId(prefix: string, now: number = Date.now()): string {
  return `${prefix}_${now.toString(36).padStart(9, '0')}${random(12).toString('base64url')}`;
}

export const newMessageId = (now?: number): string => newId('msg', now);
export const newDlqId = (now?: number): string => newId('dlq', now);
export const newScheduleId = (now?: number): string => newId('scd', now);

/** A signing key in the QStash style (`sig_` + random text); HS256 uses its UTF-8 bytes. */
export const newSigningKey = (): string => `sig_${randomBytes(24).toString('base64url')}`;

/** A random token for fencing leases; never shown to users. */
export const newLeaseToken = (): string => random(12).toString('base64url');
