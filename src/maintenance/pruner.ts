/**
 * Keeps the log, the DLQ, the deduplication keys and workflow runs bounded: deletes events past
 * the retention, DLQ entries past their plan's retention, expired deduplication keys, and ended
 * workflow runs (not in the workflow DLQ) with their history past the event retention. Works in small
 * batches so it never holds the database writer for long.
 */
import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/logger.js';
import type { Executor } from '../storage/driver.js';

export interface PrunerOptions {
  executor: Executor;
  clock: Clock;
  logger: Logger;
  eventRetentionMs: number;
  /** How often to prune (default 60 s). */
  intervalMs?: number;
  /** Rows per delete statement (default 5,000). */
  batch?: number;
  /**
   * Shared bodies deleted per transaction (default 100): a body can be 10 MiB, so a batch of
   * 100 is up to 1 GiB of pages freed in one commit at most.
   */
  bodyBatch?: number;
}

export interface PruneResult {
  events: number;
  dlq: number;
  dedup: number;
  workflowRuns: number;
  /** Shared bodies deleted because nothing references them any more (migration 011). */
  bodies: number;
}

export class Pruner {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;

  constructor(private readonly options: PrunerOptions) {}

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => {
      this.running ??= this.runOnce()
        .catch((error: unknown) => this.options.logger.error({ err: error }, 'pruning failed'))
        .finally(() => (this.running = undefined));
    }, this.options.intervalMs ?? 60_000);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
  }

  async runOnce(): Promise<PruneResult> {
    const { executor, clock } = this.options;
    const limit = this.options.batch ?? 5_000;
    const now = clock.now();
    const drain = async (step: () => Promise<number>, max = limit): Promise<number> => {
      let total = 0;
      for (;;) {
        const n = await step();
        total += n;
        if (n < max) return total;
      }
    };
    const bodyLimit = this.options.bodyBatch ?? 100;
    const result = {
      events: await drain(() =>
        executor.eventDeleteBefore({ before: now - this.options.eventRetentionMs, limit }),
      ),
      dlq: await drain(() => executor.dlqDeleteExpired({ now, limit })),
      dedup: await drain(() => executor.dedupDeleteExpired({ now, limit })),
      workflowRuns: await drain(() =>
        executor.workflowRunDeleteEnded({ before: now - this.options.eventRetentionMs, limit }),
      ),
      // Last: the deletes above drop references, and what they left unreferenced goes now.
      // Delivered and cancelled messages drop theirs too, between runs.
      bodies: await drain(() => executor.bodyDeleteUnreferenced({ limit: bodyLimit }), bodyLimit),
    };
    if (result.events + result.dlq + result.dedup + result.workflowRuns + result.bodies > 0) {
      this.options.logger.info(result, 'pruned expired records');
    }
    return result;
  }
}
