/**
 * Load shedding for publishes (docs/reliability.md, "Overload"). Without it, a node offered more
 * publishes than it can commit queues them in memory: memory grows and every publish waits
 * longer (a p99 of 12 s was measured against a 50,000-message backlog). With it, a publish that
 * arrives while storage is falling behind is refused at once with `503` and `Retry-After`,
 * before anything is stored, so a publisher can retry it elsewhere or later, and the publishes
 * that are accepted are answered within a bound.
 *
 * Two signals, both read before a publish is handed to the publisher (never after, so a refused
 * publish is never stored and an admitted one is never dropped):
 * - **wait** (`--publish-wait-limit`): the oldest admitted publish still waiting for its commit
 *   has waited this long. Like CoDel's sojourn time, this measures the queue, not the offered
 *   rate: a node that commits fast admits any rate, one that stalls (a slow disk, a busy
 *   PostgreSQL, a starved CPU) starts refusing within the limit, and admits again as soon as the
 *   waiting publishes are answered.
 * - **queue** (`--publish-queue-limit`): messages admitted and not yet committed. Bounds the memory
 *   a burst can take before the wait signal sees it (a burst arrives faster than any commit).
 *
 * A publish that finds nothing waiting is always admitted, whatever its size, so a request
 * larger than the queue limit is not refused forever and an idle node never refuses.
 * The counts are per node (each node has its own memory and its own commit queue).
 */
import { FerryError } from '../core/errors.js';
import type { PublishRefusal } from '../core/metrics.js';

export interface AdmissionOptions {
  /** Most messages admitted and not yet committed on this node; 0 = no limit. */
  maxPendingMessages: number;
  /** Refuse while the oldest admitted publish has waited this long for its commit, ms; 0 = no limit. */
  maxWaitMs: number;
  /** The time, ms: the injected clock's (tests step it); default `performance.now()`. */
  now?: () => number;
}

export class PublishAdmission {
  /** Admitted requests not yet answered by the publisher: ticket → admission time, oldest first. */
  private readonly waiting = new Map<number, number>();
  private nextTicket = 0;
  private pending = 0;
  private readonly now: () => number;

  constructor(
    private readonly options: AdmissionOptions,
    /** Called for each refused request (metrics). */
    private readonly onRefused: (reason: PublishRefusal) => void = () => undefined,
  ) {
    this.now = options.now ?? (() => performance.now());
  }

  /** Messages admitted and not yet committed. */
  get pendingMessages(): number {
    return this.pending;
  }

  /**
   * Runs `store` (everything a publish writes) for a request that creates `messages` messages,
   * when admitted; resolves with its result.
   *
   * @throws FerryError 503 with `Retry-After` when refused; `store` is then not called.
   */
  async run<T>(messages: number, store: () => Promise<T>): Promise<T> {
    const now = this.now();
    this.check(messages, now);
    const ticket = this.nextTicket++;
    this.waiting.set(ticket, now);
    this.pending += messages;
    try {
      return await store();
    } finally {
      this.waiting.delete(ticket);
      this.pending -= messages;
    }
  }

  private check(messages: number, now: number): void {
    const oldest = this.waiting.values().next();
    if (oldest.done) return;
    const { maxPendingMessages, maxWaitMs } = this.options;
    if (maxPendingMessages > 0 && this.pending + messages > maxPendingMessages) {
      this.refuse(
        'queue',
        `${this.pending} messages are waiting to be stored and this request adds ${messages} ` +
          `(at most ${maxPendingMessages}, --publish-queue-limit)`,
      );
    }
    const waited = now - oldest.value;
    if (maxWaitMs > 0 && waited >= maxWaitMs) {
      this.refuse(
        'wait',
        `the oldest publish has waited ${Math.round(waited)} ms to be stored ` +
          `(at most ${maxWaitMs} ms, --publish-wait-limit)`,
      );
    }
  }

  private refuse(reason: PublishRefusal, why: string): never {
    this.onRefused(reason);
    throw new FerryError(503, `Ferry is overloaded: ${why}; nothing was stored, try again later`, {
      headers: { 'retry-after': String(this.retryAfterS()) },
    });
  }

  /** Seconds a refused client is asked to wait: the wait limit, at least 1 s. */
  private retryAfterS(): number {
    return Math.max(1, Math.ceil(this.options.maxWaitMs / 1000));
  }
}
