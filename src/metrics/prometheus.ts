/**
 * The Prometheus side of `MetricsSink` (prom-client): counters and histograms fed by the engine,
 * the publisher, the scheduler and the API, gauges read from storage at scrape time
 * (`storage-gauges.ts`), and Node's process metrics. `docs/metrics.md` documents every series;
 * keep the two in step.
 *
 * No label takes unbounded values: no message id, no URL. The account id is a label only with
 * `accountLabel` (`--metrics-account-label`), for deployments with few accounts.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type {
  AttemptOutcome,
  MetricsSink,
  PublishKind,
  PublishRefusal,
  WorkflowRunEvent,
} from '../core/metrics.js';
import { VERSION } from '../core/version.js';

export interface PrometheusMetricsOptions {
  /** Add an `account` label to the per-account counters (unbounded with many accounts). */
  accountLabel: boolean;
}

/** Seconds: 1 ms to 1 min, for acknowledgements, attempts and commits. */
const LATENCY_BUCKETS = [
  0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
];
/** Seconds: 10 ms to 1 h, for lateness (a backlog can make a message minutes late). */
const LATENESS_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600];
/** Messages per claim (the engine claims at most 200 by default). */
const CLAIM_BUCKETS = [1, 2, 5, 10, 25, 50, 100, 200, 500];

const PUBLISH_KINDS: readonly PublishKind[] = [
  'publish',
  'batch',
  'schedule',
  'callback',
  'workflow',
];
const PUBLISH_REFUSALS: readonly PublishRefusal[] = ['wait', 'queue'];
const WORKFLOW_RUN_EVENTS: readonly WorkflowRunEvent[] = [
  'started',
  'succeeded',
  'failed',
  'canceled',
];
const ATTEMPT_OUTCOMES: readonly AttemptOutcome[] = [
  'delivered',
  'retried',
  'failed',
  'non_retryable',
];

export class PrometheusMetrics implements MetricsSink {
  readonly registry = new Registry();
  private readonly publishedTotal: Counter<'kind' | 'account'>;
  private readonly attemptsTotal: Counter<'outcome' | 'account'>;
  private readonly dlqMovesTotal: Counter<'account'>;
  private readonly ackSeconds: Histogram;
  private readonly refusedTotal: Counter<'reason'>;
  private readonly attemptSeconds: Histogram;
  private readonly latenessSeconds: Histogram;
  private readonly claimSize: Histogram;
  private readonly scheduleLatenessSeconds: Histogram;
  private readonly commitSeconds: Histogram<'durable'>;
  private readonly workflowRunsTotal: Counter<'event'>;
  private readonly accountLabel: boolean;
  private readonly publishedByKind = new Map<PublishKind, Counter.Internal>();
  private readonly attemptsByOutcome = new Map<AttemptOutcome, Counter.Internal>();
  private readonly commitDurable: Histogram.Internal<'durable'>;
  private readonly commitNotDurable: Histogram.Internal<'durable'>;

  constructor(options: PrometheusMetricsOptions) {
    this.accountLabel = options.accountLabel;
    const registers = [this.registry];
    const account = options.accountLabel ? (['account'] as const) : ([] as const);
    collectDefaultMetrics({ register: this.registry });
    new Gauge({
      name: 'ferry_build_info',
      help: 'Always 1; the label names the version of Ferry this process runs.',
      labelNames: ['version'],
      registers,
    }).set({ version: VERSION }, 1);
    this.publishedTotal = new Counter({
      name: 'ferry_messages_published_total',
      help: 'Messages stored, by how they were published (publish, batch, schedule, callback, workflow).',
      labelNames: ['kind', ...account],
      registers,
    });
    this.attemptsTotal = new Counter({
      name: 'ferry_delivery_attempts_total',
      help: 'Delivery attempts by outcome (delivered, retried, failed, non_retryable).',
      labelNames: ['outcome', ...account],
      registers,
    });
    this.dlqMovesTotal = new Counter({
      name: 'ferry_dlq_moves_total',
      help: 'Messages moved to the dead-letter queue after their last attempt failed.',
      labelNames: [...account],
      registers,
    });
    this.ackSeconds = new Histogram({
      name: 'ferry_publish_ack_seconds',
      help: 'Time from a publish request (publish, enqueue, batch) to its acknowledgement: parsing, the durable commit, the answer.',
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.refusedTotal = new Counter({
      name: 'ferry_publishes_refused_total',
      help: 'Publish requests (publish, enqueue, batch) refused with 503 because storage fell behind: reason "wait" (--publish-wait-limit) or "queue" (--publish-queue-limit).',
      labelNames: ['reason'],
      registers,
    });
    for (const reason of PUBLISH_REFUSALS) this.refusedTotal.labels({ reason }).inc(0);
    this.attemptSeconds = new Histogram({
      name: 'ferry_delivery_attempt_duration_seconds',
      help: 'Duration of one HTTP delivery attempt, from sending the request to the end of the response.',
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.latenessSeconds = new Histogram({
      name: 'ferry_first_attempt_lateness_seconds',
      help: 'Time from when a message was first due (publish time plus any delay) to the start of its first attempt.',
      buckets: LATENESS_BUCKETS,
      registers,
    });
    this.claimSize = new Histogram({
      name: 'ferry_claim_batch_size',
      help: 'Messages taken by one non-empty claim of the delivery engine.',
      buckets: CLAIM_BUCKETS,
      registers,
    });
    this.scheduleLatenessSeconds = new Histogram({
      name: 'ferry_schedule_lateness_seconds',
      help: 'Time from a schedule tick to the commit of the messages it fired.',
      buckets: LATENESS_BUCKETS,
      registers,
    });
    this.commitSeconds = new Histogram({
      name: 'ferry_storage_commit_seconds',
      help: 'Time from the end of a transaction’s work to its commit being reported; with durable="true" it includes the fsync.',
      labelNames: ['durable'],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    if (!options.accountLabel) {
      // Bound once: an increment then skips hashing its labels (this is the hot path). Every
      // series exists from the start at 0, so rates and alerts see the first increment.
      for (const kind of PUBLISH_KINDS) {
        this.publishedByKind.set(kind, this.publishedTotal.labels({ kind }));
      }
      for (const outcome of ATTEMPT_OUTCOMES) {
        this.attemptsByOutcome.set(outcome, this.attemptsTotal.labels({ outcome }));
      }
      for (const child of [...this.publishedByKind.values(), ...this.attemptsByOutcome.values()]) {
        child.inc(0);
      }
      this.dlqMovesTotal.inc(0);
    }
    this.workflowRunsTotal = new Counter({
      name: 'ferry_workflow_runs_total',
      help: 'Workflow runs started (a trigger, a resume or restart, an invoke) and ended, by event (started, succeeded, failed, canceled).',
      labelNames: ['event'],
      registers,
    });
    for (const event of WORKFLOW_RUN_EVENTS) this.workflowRunsTotal.labels({ event }).inc(0);
    this.commitDurable = this.commitSeconds.labels({ durable: 'true' });
    this.commitNotDurable = this.commitSeconds.labels({ durable: 'false' });
  }

  published(kind: PublishKind, accountId: string, count: number): void {
    const child = this.publishedByKind.get(kind);
    if (child) child.inc(count);
    else this.publishedTotal.inc({ kind, account: accountId }, count);
  }

  publishAcknowledged(seconds: number): void {
    this.ackSeconds.observe(seconds);
  }

  publishRefused(reason: PublishRefusal): void {
    this.refusedTotal.inc({ reason });
  }

  attempted(outcome: AttemptOutcome, accountId: string): void {
    const child = this.attemptsByOutcome.get(outcome);
    if (child) child.inc();
    else this.attemptsTotal.inc({ outcome, account: accountId });
  }

  movedToDlq(accountId: string, count: number): void {
    this.dlqMovesTotal.inc(this.accountLabel ? { account: accountId } : {}, count);
  }

  attemptDuration(seconds: number): void {
    this.attemptSeconds.observe(seconds);
  }

  firstAttemptLateness(seconds: number): void {
    this.latenessSeconds.observe(Math.max(0, seconds));
  }

  claimBatch(size: number): void {
    this.claimSize.observe(size);
  }

  scheduleLateness(seconds: number): void {
    this.scheduleLatenessSeconds.observe(Math.max(0, seconds));
  }

  storageCommit(seconds: number, durable: boolean): void {
    (durable ? this.commitDurable : this.commitNotDurable).observe(seconds);
  }

  workflowRuns(event: WorkflowRunEvent, count: number): void {
    this.workflowRunsTotal.inc({ event }, count);
  }

  /** The text exposition of every series. */
  scrape(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
