/**
 * `GET /ready`: 200 only when this node can serve. `/health` stays a liveness check (the process
 * answers); readiness also asks storage: it must answer within a bound and have every migration
 * of this build applied. During a graceful stop it answers 503 so a load balancer stops sending
 * work before the port closes.
 */
import type { FastifyInstance } from 'fastify';
import type { Logger } from '../core/logger.js';
import type { MigrationStatus } from '../storage/driver.js';

export type Readiness = { ready: true } | { ready: false; reason: string };

export interface ReadinessOptions {
  migrationStatus: () => Promise<MigrationStatus>;
  /** True while storage has no room to write (SQLite's full disk or size limit). */
  storageFull?: () => boolean;
  /** True once a graceful stop has begun. */
  stopping: () => boolean;
  logger: Logger;
  /** Longest wait for storage to answer, ms (default 2 s). */
  timeoutMs?: number;
}

/** Asks storage once; never throws. */
export async function checkReadiness(options: ReadinessOptions): Promise<Readiness> {
  if (options.stopping()) return { ready: false, reason: 'shutting down' };
  const timeoutMs = options.timeoutMs ?? 2_000;
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    const status = await Promise.race([options.migrationStatus(), timeout]);
    // Reads still work and deliveries free space, but publishes are refused: not ready.
    if (options.storageFull?.()) {
      return { ready: false, reason: 'storage is full: writes fail for lack of space' };
    }
    if (status.pending.length > 0) {
      return {
        ready: false,
        reason:
          `migrations not applied: ${status.pending.length} of ${status.latest} pending ` +
          `(versions ${status.pending.join(', ')})`,
      };
    }
    return { ready: true };
  } catch (error) {
    // The detail (host, port, driver message) goes to the log, not to whoever can reach /ready.
    options.logger.warn({ err: error }, 'readiness: storage does not answer');
    const code = (error as { code?: unknown }).code;
    return {
      ready: false,
      reason: `storage does not answer${typeof code === 'string' ? ` (${code})` : ''}`,
    };
  } finally {
    clearTimeout(timer);
  }
}

export function readinessRoute(app: FastifyInstance, options: ReadinessOptions): void {
  app.get('/ready', async (_request, reply) => {
    const readiness = await checkReadiness(options);
    if (readiness.ready) return reply.send({ status: 'ready' });
    return reply.code(503).send({ status: 'unavailable', error: readiness.reason });
  });
}
