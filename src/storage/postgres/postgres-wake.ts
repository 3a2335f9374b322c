import { createHash } from 'node:crypto';

/**
 * The LISTEN/NOTIFY channel of a schema. Channels are database-wide, so each schema gets its
 * own: deployments (or test runs) sharing a database in different schemas do not wake each
 * other. A hash keeps the name within the 63-byte identifier limit, past which LISTEN would
 * silently truncate the name while pg_notify rejects it.
 */
export function wakeChannelOf(schema: string): string {
  if (schema === 'public') return 'ferry_wake';
  return `ferry_wake_${createHash('sha256').update(schema).digest('hex').slice(0, 16)}`;
}
