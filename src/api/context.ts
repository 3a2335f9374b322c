import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/logger.js';
import type { UsageMetric, UsageRecorder } from '../core/management.js';
import type { MetricsSink } from '../core/metrics.js';
import type { Account } from '../core/types.js';
import type { AccountDirectory } from '../engine/accounts.js';
import type { Publisher } from '../engine/publisher.js';
import type { PublishAdmission } from './admission.js';
import type { Executor } from '../storage/driver.js';

/** What the route modules need; built once in `app.ts`. */
export interface ApiContext {
  executor: Executor;
  clock: Clock;
  accounts: AccountDirectory;
  publisher: Publisher;
  /** Load shedding: every publish's writes run through it (`--publish-wait-limit`). */
  admission: PublishAdmission;
  logger: Logger;
  /** Header prefix (`Svc`); every custom header name is built from it. */
  prefix: string;
  /** Refuse private and loopback destinations at publish time. */
  production: boolean;
  /** Messages were stored outside the publisher (DLQ retry): wake the engine. */
  onMessagesStored: () => void;
  /** Metering: counts what the publisher and engine do not see (cancels, DLQ retries, bytes). */
  usage: UsageRecorder;
  /** This month's metered count of a metric for an account (budget checks). */
  monthCount(accountId: string, metric: UsageMetric, now: number): Promise<number>;
  /** Today's (UTC) metered count of a metric for an account (daily quotas). */
  dayCount(accountId: string, metric: UsageMetric, now: number): Promise<number>;
  /** A schedule was created, replaced or resumed: wake this node's scheduler. */
  onSchedulesChanged: () => void;
  /** Publish acknowledgement times (`/metrics`). */
  metrics: MetricsSink;
  /** What one request may create (`--max-request-messages`, `--max-request-bytes`). */
  requestCaps: RequestCaps;
}

export interface RequestCaps {
  /** Most messages one request may create. */
  messages: number;
  /** Most body bytes one request may store, counted per message. */
  bytes: number;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The authenticated messaging account (set by the auth hook). */
    account: Account;
  }
}
