import type { Clock } from '../../core/clock.js';
import type { Logger } from '../../core/logger.js';
import type { ManagementUser } from '../../core/management.js';
import type { PlanTable } from '../../core/plans.js';
import type { SecretBox } from '../../core/secret-box.js';
import type { AccountDirectory } from '../../engine/accounts.js';
import type { UsageMeter } from '../../maintenance/usage-meter.js';
import type { Executor } from '../../storage/driver.js';

/** What the management routes need; built once in `app.ts`. */
export interface MgmtContext {
  executor: Executor;
  clock: Clock;
  /** Dropping an account's cached entry makes a token reset or plan change apply at once. */
  accounts: AccountDirectory;
  plans: PlanTable;
  /** Flushed before statistics are read, so this node's latest counts are in them. */
  meter: UsageMeter;
  logger: Logger;
  /** Seals the credentials shown again to their owner (accounts, search indexes). */
  secrets: SecretBox;
  /** How long the events log keeps entries (the account's `retention`), ms. */
  eventRetentionMs: number;
  /** Online copy of the SQLite database into a file (`POST /v2/admin/backup`); absent on PostgreSQL. */
  backup?: { dataDir: string; run(path: string): Promise<void> };
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The authenticated management user (set by the management auth hook). */
    mgmtUser: ManagementUser;
  }
}
