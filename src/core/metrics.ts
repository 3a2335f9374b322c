/**
 * Where the engine, the publisher, the scheduler and the API report what they measure. The
 * Prometheus implementation lives in `metrics/prometheus.ts` and is passed in from `app.ts`, so
 * the layers below never import prom-client. Every method must be cheap and must not throw: they
 * run on the hot path. Durations are seconds (Prometheus' base unit).
 */

/** How a message came to be published (`ferry_messages_published_total{kind}`). */
export type PublishKind = 'publish' | 'batch' | 'schedule' | 'callback' | 'workflow';

/** Why load shedding refused a publish (`ferry_publishes_refused_total{reason}`, api/admission.ts). */
export type PublishRefusal = 'wait' | 'queue';

/** What happened to workflow runs (`ferry_workflow_runs_total{event}`). */
export type WorkflowRunEvent = 'started' | 'succeeded' | 'failed' | 'canceled';

/** How one delivery attempt ended (`ferry_delivery_attempts_total{outcome}`). */
export type AttemptOutcome = 'delivered' | 'retried' | 'failed' | 'non_retryable';

export interface MetricsSink {
  /** `count` messages of `kind` were committed for `accountId`. */
  published(kind: PublishKind, accountId: string, count: number): void;
  /** A publish request (publish, enqueue or batch) was acknowledged after `seconds`. */
  publishAcknowledged(seconds: number): void;
  /** A publish request was refused with 503 by load shedding (api/admission.ts), for `reason`. */
  publishRefused(reason: PublishRefusal): void;
  /** A delivery attempt's outcome was committed. */
  attempted(outcome: AttemptOutcome, accountId: string): void;
  /** `count` failed messages of `accountId` went to the DLQ. */
  movedToDlq(accountId: string, count: number): void;
  /** How long one HTTP delivery attempt took, from sending to the end of the response. */
  attemptDuration(seconds: number): void;
  /** How late a message's first attempt started after the time it was due (publish + delay). */
  firstAttemptLateness(seconds: number): void;
  /** Messages one engine claim took. */
  claimBatch(size: number): void;
  /** How late a schedule fired after its tick. */
  scheduleLateness(seconds: number): void;
  /** Time from the end of a transaction's work to its commit being reported (fsync included when durable). */
  storageCommit(seconds: number, durable: boolean): void;
  /** `count` workflow runs started (a trigger, a resume or restart, an invoke) or ended so. */
  workflowRuns(event: WorkflowRunEvent, count: number): void;
}

/** The sink of a Ferry without metrics (and of unit tests). */
export const noMetrics: MetricsSink = {
  published: () => undefined,
  publishAcknowledged: () => undefined,
  publishRefused: () => undefined,
  attempted: () => undefined,
  movedToDlq: () => undefined,
  attemptDuration: () => undefined,
  firstAttemptLateness: () => undefined,
  claimBatch: () => undefined,
  scheduleLateness: () => undefined,
  storageCommit: () => undefined,
  workflowRuns: () => undefined,
};
