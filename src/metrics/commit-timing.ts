/**
 * Times storage commits for `ferry_storage_commit_seconds` without touching the drivers: the
 * executor's top-level `transaction` is wrapped once, at composition (app.ts). The measured span
 * starts when the transaction's work (`fn`) is done and ends when `transaction()` resolves: the
 * COMMIT, and with `durable` (the default) the wait for the fsync.
 */
import { performance } from 'node:perf_hooks';
import type { MetricsSink } from '../core/metrics.js';
import type { Executor, TransactionOptions } from '../storage/driver.js';

export function timeCommits(executor: Executor, metrics: MetricsSink): void {
  const transaction = executor.transaction.bind(executor);
  // An own property shadows the class method; transactions nested on a `tx` are not timed
  // (they commit with their outer transaction).
  executor.transaction = async <T>(
    fn: (tx: Executor) => Promise<T>,
    options?: TransactionOptions,
  ): Promise<T> => {
    let workDone = 0;
    const result = await transaction(async (tx) => {
      const value = await fn(tx);
      workDone = performance.now();
      return value;
    }, options);
    metrics.storageCommit((performance.now() - workDone) / 1000, options?.durable !== false);
    return result;
  };
}
