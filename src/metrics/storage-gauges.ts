/**
 * The gauges read from storage at scrape time: messages due, delayed, waiting behind flow
 * control and in flight, DLQ entries, and runs in the workflow DLQ. Each count is bounded (`limit` rows, see
 * `messageCountByState`), and a sample serves every scrape within `minIntervalMs`, so frequent
 * scrapes or several Prometheus servers cost one bounded read per interval. The counts cover
 * every node sharing the database: on PostgreSQL each node reports the same values.
 */
import { Gauge, type Registry } from 'prom-client';
import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/logger.js';
import type { Executor, MessageCounts } from '../storage/driver.js';

export interface StorageGaugesOptions {
  executor: Executor;
  clock: Clock;
  logger: Logger;
  registry: Registry;
  /** Largest value of each message count (default 100,000). */
  limit?: number;
  /** How long a sample serves later scrapes, ms (default 5 s). */
  minIntervalMs?: number;
}

interface Sample extends MessageCounts {
  dlq: number;
  workflowDlq: number;
}

const STATES = {
  due: 'due',
  delayed: 'delayed',
  waiting: 'waiting',
  inFlight: 'in_flight',
} as const;

export function registerStorageGauges(options: StorageGaugesOptions): void {
  const { executor, clock, logger, registry } = options;
  const limit = options.limit ?? 100_000;
  const minIntervalMs = options.minIntervalMs ?? 5_000;
  let last: { at: number; sample: Sample } | undefined;
  let reading: Promise<Sample | undefined> | undefined;

  const read = async (): Promise<Sample | undefined> => {
    const now = clock.now();
    if (last && now - last.at < minIntervalMs) return last.sample;
    try {
      const [counts, dlq, workflowDlq] = await Promise.all([
        executor.messageCountByState({ now, limit }),
        executor.dlqCountAll(),
        executor.workflowDlqCount({ limit }),
      ]);
      last = { at: now, sample: { ...counts, dlq, workflowDlq } };
      return last.sample;
    } catch (error) {
      // The scrape still answers (process and counter series); these gauges keep their values.
      logger.warn({ err: error }, 'reading the metrics gauges from storage failed');
      return undefined;
    }
  };
  // Concurrent scrapes share one read.
  const sample = (): Promise<Sample | undefined> =>
    (reading ??= read().finally(() => (reading = undefined)));

  new Gauge({
    name: 'ferry_messages',
    help: `Messages that are not final, by state (due, delayed, waiting, in_flight); each count stops at ${limit}.`,
    labelNames: ['state'],
    registers: [registry],
    async collect() {
      const s = await sample();
      if (!s) return;
      for (const [key, state] of Object.entries(STATES)) {
        this.set({ state }, s[key as keyof typeof STATES]);
      }
    },
  });
  new Gauge({
    name: 'ferry_dlq_messages',
    help: 'Entries in the dead-letter queues of every account.',
    registers: [registry],
    async collect() {
      const s = await sample();
      if (s) this.set(s.dlq);
    },
  });
  new Gauge({
    name: 'ferry_workflow_dlq_runs',
    help: `Runs in the workflow dead-letter queues of every account; the count stops at ${limit}.`,
    registers: [registry],
    async collect() {
      const s = await sample();
      if (s) this.set(s.workflowDlq);
    },
  });
}
