/**
 * The delivery engine: claim → dispatch → outcome → complete.
 *
 * It keeps up to `concurrency` deliveries in flight. When there is room it claims a batch of due
 * messages (a lease: their `dueAt` moves to the lease expiry, so a dead node's messages come
 * back by themselves), sends each over HTTP, decides the outcome with a pure function, and
 * hands the outcome to the OutcomeWriter, which writes everything that finished meanwhile in one
 * transaction (group commit).
 * It sleeps until the earliest due time or a wake-up (a publish on this node, or NOTIFY from
 * another), and never polls in a tight loop.
 */
import { DeliveryAbort } from './delivery-abort.js';
import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/logger.js';
import { compileRetryDelay } from '../core/retry-delay.js';
import { decideOutcome } from '../core/retry-timing.js';
import type { Account, ClaimedMessage, Message } from '../core/types.js';
import { newLeaseToken } from '../core/ids.js';
import { hopsHeader } from '../core/hops.js';
import type { PlanLimits } from '../core/plans.js';
import { NOT_DURABLE, type Executor } from '../storage/driver.js';
import type { AccountDirectory } from './accounts.js';
import type { UsageRecorder } from '../core/management.js';
import type { MetricsSink } from '../core/metrics.js';
import type { Dispatcher } from './dispatcher.js';
import { OutcomeWriter, type Completion } from './outcome-writer.js';
import { eventOf } from './records.js';
import { WorkflowDelivery } from './workflow-delivery.js';
import { gateOf } from '../core/flow-control.js';
import { AccountSlots } from './account-slots.js';
import { originOf } from '../core/origin.js';
import { OriginLimit, TICK_MS } from './origin-limit.js';

/** Gates (flow-control keys, queues) admitted per claim; more ready ones claim again at once. */
const ADMIT_GATES = 100;
/** Consecutive failed attempts after which an origin is paced (see origin-limit.ts). */
const FAILURE_STREAK = 10;
/** Attempts a paced origin may start at once. */
const PACE_BURST = 10;
/** Messages one spread of an origin's due backlog moves (one statement); more spread again. */
const SPREAD_LIMIT = 5_000;
/** A stalled or paced origin's messages in one claim that make it spread its due backlog. */
const SPREAD_MIN = 10;
/**
 * Age of the oldest attempt of an origin at its cap that makes it congested (origin-limit.ts):
 * well above a healthy destination's answer time, so that only slow destinations are claimed
 * one batch of free slots at a time.
 */
const CONGESTED_MS = 100;

export interface EngineOptions {
  executor: Executor;
  clock: Clock;
  dispatcher: Dispatcher;
  accounts: AccountDirectory;
  logger: Logger;
  /** Header prefix (`Svc`), used for the added delivery headers. */
  prefix: string;
  /** `iss` claim of the signature JWT. */
  issuer: string;
  /** Deliveries in flight at once. */
  concurrency: number;
  /** Lease length; in-flight leases are renewed every sixth of it (see extendLeases). */
  leaseMs: number;
  /** Messages claimed per claim transaction (default 200). */
  claimBatch?: number;
  /** Longest idle sleep, a safety net for a missed wake-up (default 5 s). */
  maxIdleMs?: number;
  /** Response bytes kept in events (default 8 KiB); the DLQ keeps up to max_message_size. */
  eventResponseBytes?: number;
  /** How long outcomes (and ACTIVE events) wait to share a commit (default 5 ms). */
  outcomeLingerMs?: number;
  /** Metering of delivery outcomes (see OutcomeWriter). */
  usage?: UsageRecorder;
  /**
   * Attempts in flight per destination origin (default: a quarter of `concurrency`; 0: no
   * limit), so one destination cannot hold every slot (see origin-limit.ts).
   */
  originConcurrency?: number;
  /** Age of its oldest attempt after which a saturated origin is held back (default 1 s). */
  originStallMs?: number;
  /**
   * Attempts per second to an origin whose last attempts all failed (default 50; 0: no pacing);
   * its other due messages are spread at this rate (see origin-limit.ts).
   */
  originFailureRate?: number;
  /** Largest workflow history sent inline, bytes (default 1 MiB; see WorkflowDelivery). */
  workflowInlineHistoryBytes?: number;
  /** Claim sizes, attempt durations and lateness; attempt outcomes (see OutcomeWriter). */
  metrics?: MetricsSink;
  /** See OutcomeWriterOptions.oneStatement. */
  oneStatementOutcomes?: boolean;
}

/** How an admission round ended (see Engine.admit). */
type Admission = 'again' | 'done' | 'failed';

interface InFlight {
  leaseToken: string;
  leaseUntil: number;
  abort: DeliveryAbort;
  done: Promise<void>;
}

export class Engine {
  private readonly inFlight = new Map<string, InFlight>();
  private readonly retryDelays = new Map<string, (retried: number) => number>();
  /**
   * Deliveries in flight per account on this engine (`max_global_parallelism`): the limit itself
   * on SQLite, a safety net on PostgreSQL, where the claim already keeps every account within it
   * across all nodes (see claimAdmitted).
   */
  private readonly accountSlots = new AccountSlots();
  /** Each plan's `max_global_parallelism`, for the claim. */
  private readonly maxInFlightByPlan: Record<string, number>;
  /**
   * Accounts whose due messages the last claim left for lack of a free slot: when one of their
   * deliveries here ends, its slot is free and the engine claims again (nothing else would wake
   * it: those messages are already due).
   */
  private atLimit = new Set<string>();
  /** Attempts in flight per destination origin (fairness between destinations). */
  private readonly origins: OriginLimit;
  private readonly outcomes: OutcomeWriter;
  private readonly workflows: WorkflowDelivery;
  private running = false;
  private claiming = false;
  /** The slots the running claim may fill, kept from hand-offs meanwhile (see reserve). */
  private claimingUpTo = 0;
  private wakePending = false;
  /** When the engine will claim next (its timer); Infinity when none is set. */
  private plannedAt = Infinity;
  /** The earliest due time reported while a claim was running (see wakeAt). */
  private dueDuringClaim = Infinity;
  /** The last claim filled its batch or the engine was full: more is due than it took. */
  private backlog = false;
  private timer: NodeJS.Timeout | undefined;
  private immediate: NodeJS.Immediate | undefined;
  private heartbeat: NodeJS.Timeout | undefined;
  private readonly claimBatch: number;
  private readonly maxIdleMs: number;
  /** Origins whose due backlog is being spread, and whether another spread was asked meanwhile. */
  private readonly spreading = new Map<string, boolean>();

  constructor(private readonly options: EngineOptions) {
    this.claimBatch = options.claimBatch ?? 200;
    this.maxIdleMs = options.maxIdleMs ?? 5_000;
    this.maxInFlightByPlan = options.accounts.limitByPlan('max_global_parallelism');
    this.origins = new OriginLimit({
      cap: options.originConcurrency ?? Math.max(1, Math.floor(options.concurrency / 4)),
      congestedMs: CONGESTED_MS,
      stallMs: options.originStallMs ?? 1_000,
      maxHoldMs: 60_000,
      ratePerSecond: options.originFailureRate ?? 50,
      failureStreak: FAILURE_STREAK,
      burst: PACE_BURST,
      clock: options.clock,
      // A congested origin has free slots again, or stalled: claim for it.
      onChange: () => this.wake(),
    });
    this.workflows = new WorkflowDelivery({
      executor: options.executor,
      prefix: options.prefix,
      inlineHistoryBytes: options.workflowInlineHistoryBytes ?? 1024 * 1024,
    });
    this.outcomes = new OutcomeWriter({
      executor: options.executor,
      clock: options.clock,
      logger: options.logger,
      eventResponseBytes: options.eventResponseBytes ?? 8 * 1024,
      // Nobody waits on an outcome's commit, so give more outcomes the chance to share it.
      lingerMs: options.outcomeLingerMs ?? 5,
      usage: options.usage,
      metrics: options.metrics,
      oneStatement: options.oneStatementOutcomes,
    });
  }

  private room(): number {
    return this.options.concurrency - this.inFlight.size;
  }

  /** Free slots worth a claim when deliveries finish under a backlog. */
  private get refillThreshold(): number {
    return Math.max(1, Math.min(this.claimBatch, Math.floor(this.options.concurrency / 4)));
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    const every = Math.max(1, Math.floor(this.options.leaseMs / 6));
    this.heartbeat = setInterval(() => void this.extendLeases(), every);
    this.heartbeat.unref();
    this.schedule(0);
  }

  /**
   * Due times for messages published now to destinations this engine holds back (stalled or
   * paced): undefined when there are none. See OriginLimit.publishSchedule.
   */
  publishSchedule(now: number): ((url: string) => number | undefined) | undefined {
    return this.running ? this.origins.publishSchedule(now) : undefined;
  }

  /** True while the engine runs with free delivery slots: it claims what is due now itself. */
  hasRoom(): boolean {
    return this.running && this.room() > 0;
  }

  /**
   * A lease for `message`, being published now, when this engine will start its delivery as
   * soon as it is stored (`handOff`), instead of a claim reading it back: when the engine runs
   * with a slot free that no running claim may fill, nothing due is left waiting (no backlog,
   * which is older), and the message is due, without a flow-control key or queue, of an account
   * not at its limit, to an origin a claim would take it for (not paced or stalled, and
   * with a free slot if congested). The slot is held
   * until `handOff` or `cancelHandOff`. On PostgreSQL the publish keeps the lease only within the
   * account's `max_global_parallelism` across nodes (`messagePublishMany`); the rest are claimed.
   */
  reserve(message: Message, now: number): { token: string; until: number } | undefined {
    if (!this.running || this.backlog || message.dueAt > now) return undefined;
    if (this.room() - this.claimingUpTo <= 0 || gateOf(message) !== undefined) return undefined;
    if (this.atLimit.has(message.accountId) || !this.origins.takesNew(message.url, now)) {
      return undefined;
    }
    const lease = { token: newLeaseToken(), until: now + this.options.leaseMs };
    this.inFlight.set(message.id, {
      leaseToken: lease.token,
      leaseUntil: lease.until,
      abort: new DeliveryAbort(),
      done: Promise.resolve(),
    });
    return lease;
  }

  /**
   * Starts the deliveries of reserved messages, now committed with their leases: their ACTIVE
   * events are stamped now. A stopped engine leaves them to their leases' expiry.
   */
  handOff(messages: readonly ClaimedMessage[]): void {
    if (messages.length === 0) return;
    if (!this.running) {
      for (const message of messages) this.inFlight.delete(message.id);
      return;
    }
    const now = this.options.clock.now();
    void this.complete({ kind: 'events', events: messages.map((m) => eventOf(m, 'ACTIVE', now)) });
    for (const message of messages) void this.deliver(message);
  }

  /** Frees the slots of reservations whose messages were not stored (their commit failed). */
  cancelHandOff(ids: Iterable<string>): void {
    for (const id of ids) this.inFlight.delete(id);
  }

  /** Something may have become due (a publish committed): claim now instead of at the timer. */
  wake(): void {
    if (!this.running) return;
    if (this.claiming) this.wakePending = true;
    else this.schedule(0);
  }

  /**
   * Something becomes due at `dueAt` (ms; a committed write reported it, see due-watch.ts): the
   * next claim moves forward to then if it was planned later. Without this the engine would
   * sleep until the due time it read before the write (at most `maxIdleMs`), and a retry
   * rescheduled one second ahead would wait for that.
   */
  wakeAt(dueAt: number): void {
    if (!this.running) return;
    const delay = dueAt - this.options.clock.now();
    if (delay <= 0) this.wake();
    // The claim's own read of the next due time may come before this write's commit.
    else if (this.claiming) this.dueDuringClaim = Math.min(this.dueDuringClaim, dueAt);
    else if (dueAt < this.plannedAt) this.schedule(delay);
  }

  /**
   * Stops claiming, waits up to `graceMs` for in-flight deliveries, aborts the rest and releases
   * their leases (due again at once, no attempt counted), and writes every pending outcome.
   * Idempotent.
   */
  async stop(graceMs = 10_000): Promise<void> {
    this.running = false;
    clearTimeout(this.timer);
    clearImmediate(this.immediate);
    clearInterval(this.heartbeat);
    const all = (): Promise<unknown> => Promise.all([...this.inFlight.values()].map((f) => f.done));
    if (this.inFlight.size > 0) {
      let graceTimer: NodeJS.Timeout | undefined;
      const grace = new Promise<void>((resolve) => (graceTimer = setTimeout(resolve, graceMs)));
      await Promise.race([all(), grace]);
      clearTimeout(graceTimer);
      for (const flight of this.inFlight.values()) flight.abort.abort();
      await all();
    }
    await this.outcomes.drain();
  }

  /**
   * One claim-and-deliver round for tests and tools: claims what is due now (up to
   * `concurrency`), delivers it, writes the outcomes, and returns how many attempts were made.
   * Not for use while the engine is started.
   */
  async runOnce(): Promise<number> {
    // Admission first, so that what it makes due is claimed in this round (a running engine
    // claims again at once after an admission).
    await this.admit(this.options.clock.now());
    const { claimed } = await this.claimAdmitted(this.options.concurrency);
    await Promise.all(claimed.map((message) => this.deliver(message)));
    await this.outcomes.drain();
    return claimed.length;
  }

  private schedule(delayMs: number): void {
    clearTimeout(this.timer);
    clearImmediate(this.immediate);
    this.plannedAt = this.options.clock.now() + Math.max(0, delayMs);
    // setTimeout(0) waits at least 1 ms; a wake-up should claim in this turn of the loop.
    if (delayMs <= 0) this.immediate = setImmediate(() => void this.pump());
    else this.timer = setTimeout(() => void this.pump(), delayMs);
  }

  private async pump(): Promise<void> {
    if (!this.running || this.claiming) return;
    this.plannedAt = Infinity; // this is the planned claim; the next one is planned below
    const room = this.options.concurrency - this.inFlight.size;
    if (room <= 0) {
      this.backlog = true; // a finishing delivery pumps again
      return;
    }
    this.claiming = true;
    this.wakePending = false;
    this.dueDuringClaim = Infinity;
    const limit = Math.min(room, this.claimBatch);
    this.claimingUpTo = limit;
    let claimed: ClaimedMessage[];
    let taken = 0;
    let gatesReady = false;
    let nextDueAt: number | undefined;
    try {
      ({ claimed, taken, gatesReady, nextDueAt } = await this.claimAdmitted(limit));
    } catch (error) {
      this.options.logger.error({ err: error }, 'claiming due messages failed; retrying in 1 s');
      this.endClaim(1_000);
      return;
    }
    for (const message of claimed) void this.deliver(message);
    // Most claims find no flow-control gate ready: one write outside a transaction (on
    // PostgreSQL one statement). When one is, admission makes the waiting messages of keys and
    // queues that may start now due, and the claim that follows at once takes them.
    const admission = gatesReady ? await this.admit(this.options.clock.now()) : 'done';
    if (admission === 'failed') {
      this.endClaim(1_000);
      return;
    }
    this.backlog = taken === limit || admission === 'again';
    if (this.backlog) {
      this.endClaim(0);
      return;
    }
    // Read by the claim after its own time, not the clock's now: a message that became due
    // since was not claimed, and counts as the next due (it is, now).
    this.endClaim(nextDueAt === undefined ? this.maxIdleMs : nextDueAt - this.options.clock.now());
  }

  /**
   * Plans the next claim in `delayMs` (at most `maxIdleMs`), or sooner when a wake-up or an
   * earlier due time was reported while this one ran.
   */
  private endClaim(delayMs: number): void {
    this.claiming = false;
    this.claimingUpTo = 0;
    if (!this.running) return;
    const reported = this.dueDuringClaim - this.options.clock.now();
    this.schedule(this.wakePending ? 0 : Math.max(0, Math.min(delayMs, reported, this.maxIdleMs)));
  }

  /**
   * Claims due messages. Their ACTIVE events go to the outcome writer, stamped with the claim
   * time: a fast delivery's ACTIVE and DELIVERED then share one commit, and the claim itself
   * touches only the messages table (each commit writes whole pages of every table it touches).
   */
  private async claimAdmitted(limit: number): Promise<{
    claimed: ClaimedMessage[];
    taken: number;
    gatesReady: boolean;
    nextDueAt: number | undefined;
  }> {
    const now = this.options.clock.now();
    const leaseUntil = now + this.options.leaseMs;
    // The claim leaves the messages of accounts at max_global_parallelism due (on PostgreSQL,
    // counting every node's deliveries, under a lock that ends with the claim's statement).
    // Congested origins (slow destinations at their cap) get only their free slots' worth, and
    // stalled or paced ones a few messages, enough to spread their backlogs (holdStalled).
    const originRooms = this.origins.rooms(now, SPREAD_MIN);
    const {
      messages: all,
      atLimit,
      gatesReady,
      nextDueAt,
    } = await this.options.executor.messageClaimDueLimited({
      now,
      limit,
      leaseUntil,
      maxInFlightByPlan: this.maxInFlightByPlan,
      originRooms,
    });
    this.atLimit = new Set(atLimit);
    const claimed = this.holdStalled(all, now);
    if (claimed.length > 0) {
      this.options.metrics?.claimBatch(claimed.length);
      void this.complete({ kind: 'events', events: claimed.map((m) => eventOf(m, 'ACTIVE', now)) });
    }
    for (const message of claimed) {
      // `done` is replaced by the delivery's own promise in deliver(); this keeps stop() safe
      // between the claim and the start of the delivery.
      this.inFlight.set(message.id, {
        leaseToken: message.leaseToken,
        leaseUntil,
        abort: new DeliveryAbort(),
        done: Promise.resolve(),
      });
    }
    return { claimed, taken: all.length, gatesReady, nextDueAt };
  }

  /**
   * One admission round: `again` when it admitted messages or left ready gates (claim again now).
   * A failure is logged, not thrown: the claim before it holds messages to deliver. The gates
   * stay ready, and the engine tries again in a second.
   */
  private async admit(now: number): Promise<Admission> {
    try {
      const { admitted, gates } = await this.options.executor.transaction(
        (tx) => tx.flowGateAdmit({ now, limit: ADMIT_GATES }),
        NOT_DURABLE,
      );
      return admitted > 0 || gates === ADMIT_GATES ? 'again' : 'done';
    } catch (error) {
      this.options.logger.error(
        { err: error },
        'admitting flow-control messages failed; retrying in 1 s',
      );
      return 'failed';
    }
  }

  /**
   * Hands the messages of stalled origins back to storage, due after a hold (no attempt
   * counted, no ACTIVE event), and returns the rest: they would only wait here, holding slots.
   * Spreads the due backlog of a stalled or paced origin that fills much of the claim.
   */
  private holdStalled(claimed: ClaimedMessage[], now: number): ClaimedMessage[] {
    const start: ClaimedMessage[] = [];
    /** Messages of stalled or paced origins in this claim, and the hold of the stalled ones. */
    const backlogs = new Map<string, { url: string; count: number; heldUntil?: number }>();
    for (const message of claimed) {
      const stalled = this.origins.stalled(message.url, now);
      if (!stalled) start.push(message);
      if (!stalled && !this.origins.paced(message.url)) continue;
      const origin = originOf(message.url);
      let backlog = backlogs.get(origin);
      if (!backlog) backlogs.set(origin, (backlog = { url: message.url, count: 0 }));
      backlog.count += 1;
      if (stalled) {
        // Into the origin's schedule, from the end of its hold: a held message comes back
        // once per pass of the schedule, not once per hold.
        const heldUntil = this.origins.heldUntil(message.url, now);
        const dueAt = this.origins.takeSlot(message.url, now, heldUntil);
        backlog.heldUntil = heldUntil;
        void this.complete({ kind: 'release', message, dueAt });
      }
    }
    // Many of one such origin's messages in one claim: more of them are likely due. Moving them
    // all in one statement costs less than claiming and moving them a batch at a time, and lets
    // the next claim reach other destinations' messages.
    for (const { url, count, heldUntil } of backlogs.values()) {
      if (count >= SPREAD_MIN) this.spread(url, heldUntil);
    }
    return start;
  }

  private deliver(message: ClaimedMessage): Promise<void> {
    const flight = this.inFlight.get(message.id);
    const gated = gateOf(message) !== undefined;
    const done = this.attempt(message, flight?.abort)
      .then((completion) => (completion ? this.complete(completion) : undefined))
      // The attempt released a slot of its flow-control key or queue, or of its account that
      // has messages waiting for one (written: the next claim counts it free): claim again.
      .then(() => (gated || this.atLimit.has(message.accountId) ? this.wake() : undefined))
      .catch((error: unknown) => {
        // The lease expires and the message is delivered again: nothing is lost.
        this.options.logger.error({ err: error, messageId: message.id }, 'delivery failed');
      })
      .finally(() => {
        this.inFlight.delete(message.id);
        // Claim again only when more is waiting and a useful batch of slots is free: every
        // claim is a commit, and many one-row commits cost far more than a few larger ones.
        if (this.running && this.backlog && this.room() >= this.refillThreshold) void this.pump();
      });
    if (flight) flight.done = done;
    return done;
  }

  private async attempt(
    message: ClaimedMessage,
    abort?: DeliveryAbort,
  ): Promise<Completion | undefined> {
    const { accounts } = this.options;
    const account = await accounts.get(message.accountId);
    if (!account) {
      this.options.logger.warn({ messageId: message.id }, 'message of an unknown account dropped');
      await this.options.executor.messageDeleteLeasedMany({ leases: [message] });
      return undefined;
    }
    const limits = accounts.limits(account);
    // One destination cannot hold every slot: wait for a slot of its origin, or be held back
    // when the origin has stalled (see origin-limit.ts).
    const slot = await this.origins.acquire(message.url, abort);
    // Congested: back to storage, due now; claims take its messages as its slots free up.
    if (slot === 'aborted' || slot === 'returned') return { kind: 'release', message };
    if (slot === 'deferred') {
      const now = this.options.clock.now();
      const heldUntil = this.origins.heldUntil(message.url, now);
      this.spread(message.url, heldUntil);
      return {
        kind: 'release',
        message,
        dueAt: this.origins.takeSlot(message.url, now, heldUntil),
      };
    }
    try {
      // A paced origin (its last attempts failed): over its pace, the message goes back to
      // storage at its place in the origin's schedule (holdStalled spreads the rest of its due
      // backlog when a claim brings many of its messages).
      const now = this.options.clock.now();
      if (!this.origins.admit(message.url, now)) {
        return { kind: 'release', message, dueAt: this.origins.takeSlot(message.url, now) };
      }
      return await this.attemptInSlot(message, account, limits, abort);
    } finally {
      this.origins.release(message.url, slot);
    }
  }

  private async attemptInSlot(
    message: ClaimedMessage,
    account: Account,
    limits: PlanLimits,
    abort?: DeliveryAbort,
  ): Promise<Completion | undefined> {
    // max_global_parallelism: the account's deliveries in flight on this engine. Over it, the
    // message waits here (still leased) for one of the account's deliveries to end. On SQLite
    // this is the limit; on PostgreSQL the claim already kept the account within it on all
    // nodes, so this waits only when the claim saw other limits (the account's plan changed
    // meanwhile, or nodes run with different plans files).
    if (!(await this.accountSlots.acquire(account.id, limits.max_global_parallelism, abort))) {
      return { kind: 'release', message };
    }
    try {
      return await this.send(message, account, limits, abort);
    } finally {
      this.accountSlots.release(account.id);
    }
  }

  private async send(
    message: ClaimedMessage,
    account: Account,
    limits: PlanLimits,
    abort?: DeliveryAbort,
  ): Promise<Completion | undefined> {
    const { clock, prefix } = this.options;
    const timeoutMs = Math.min(message.spec.timeoutMs ?? Infinity, limits.timeout * 1000);
    const headers: Record<string, string | string[]> = {};
    for (const [name, values] of Object.entries(message.spec.headers)) {
      headers[name] = values.length === 1 ? (values[0] as string) : values;
    }
    headers['User-Agent'] = 'Ferry';
    headers[`${prefix}-Message-Id`] = message.id;
    headers[`${prefix}-Retried`] = String(message.retried);
    headers[`${prefix}-Caller-Ip`] = message.callerIp;
    if (message.topicName) headers[`${prefix}-Topic-Name`] = message.topicName;
    if (message.endpointName) headers[`${prefix}-Endpoint-Name`] = message.endpointName;
    if (message.scheduleId) headers[`${prefix}-Schedule-Id`] = message.scheduleId;
    if (message.spec.hops !== undefined) headers[hopsHeader(prefix)] = String(message.spec.hops);
    let body = message.body;
    if (message.spec.workflow) {
      const workflow = await this.workflows.prepare(message);
      if (!workflow) return { kind: 'cancel', message, at: clock.now() };
      Object.assign(headers, workflow.headers);
      body = workflow.body;
    }
    const metrics = this.options.metrics;
    const sentAt = clock.now();
    if (message.retried === 0) metrics?.firstAttemptLateness((sentAt - message.notBefore) / 1000);
    const attempt = await this.options.dispatcher.send({
      url: message.url,
      method: message.spec.method,
      headers,
      body,
      timeoutMs,
      maxResponseBytes: limits.max_message_size,
      abort,
      sign: {
        header: `${prefix}-Signature`,
        signingKey: account.currentSigningKey,
        issuer: this.options.issuer,
        nowMs: clock.now(),
      },
    });
    if (abort?.aborted && attempt.kind === 'error' && !attempt.error.startsWith('timeout')) {
      return { kind: 'release', message };
    }
    const finishedAt = clock.now();
    metrics?.attemptDuration((finishedAt - sentAt) / 1000);
    const outcome = decideOutcome({
      attempt,
      retried: message.retried,
      maxRetries: message.maxRetries,
      retryDelay: this.retryDelay(message.spec.retryDelayExpression),
      now: finishedAt,
      prefix,
    });
    if (this.origins.recordAttempt(message.url, outcome.kind !== 'delivered', finishedAt)) {
      this.spread(message.url);
    }
    return {
      kind: 'outcome',
      message,
      attempt,
      outcome,
      finishedAt,
      dlqRetentionMs: limits.max_dlq_retention_time_milis,
      maxDlqSize: limits.max_dlq_size,
    };
  }

  private retryDelay(source: string | undefined): ((retried: number) => number) | undefined {
    if (source === undefined) return undefined;
    let fn = this.retryDelays.get(source);
    if (!fn) {
      // Validated at publish time; a stored expression that no longer compiles falls back to
      // the default backoff instead of failing the delivery.
      try {
        fn = compileRetryDelay(source, 'retryDelayExpression');
      } catch {
        return undefined;
      }
      if (this.retryDelays.size > 1_000) this.retryDelays.clear();
      this.retryDelays.set(source, fn);
    }
    return fn;
  }

  /**
   * Moves the origin's due messages (those nobody holds) into its schedule, from `notBefore` on
   * (see origin-limit.ts), in one statement of its own, so the claim finds other destinations'
   * messages at the head of the due order. One spread per origin runs at a time; one asked for
   * meanwhile runs after it.
   */
  private spread(url: string, notBefore?: number): void {
    const origin = originOf(url);
    const stepMs = this.origins.stepMs;
    if (!Number.isFinite(stepMs)) return; // pacing is off
    if (this.spreading.has(origin)) {
      this.spreading.set(origin, true);
      return;
    }
    this.spreading.set(origin, false);
    const now = this.options.clock.now();
    const from = this.origins.takeSlot(url, now, notBefore);
    this.options.executor
      .transaction(
        (tx) =>
          tx.messageSpreadDue({ origin, now, from, stepMs, tickMs: TICK_MS, limit: SPREAD_LIMIT }),
        NOT_DURABLE,
      )
      .then((last) => {
        if (last !== undefined) this.origins.scheduledUntil(url, last, this.options.clock.now());
      })
      .catch((error: unknown) => {
        // Nothing is lost: the messages stay due and are claimed (and paced) one by one.
        this.options.logger.error({ err: error, origin }, 'spreading due messages failed');
      })
      .finally(() => {
        const again = this.spreading.get(origin) === true;
        this.spreading.delete(origin);
        if (again && this.running) this.spread(url, notBefore);
      });
  }

  /** Queues an outcome (or log lines) for the outcome writer; resolves once written. */
  private complete(completion: Completion): Promise<void> {
    return this.outcomes.add(completion);
  }

  /**
   * Keeps leases of long deliveries alive, so only a dead node's messages are re-delivered. A
   * lease is renewed once less than 5/6 of it is left, checked every 1/6: a heartbeat may come
   * up to 2/3 of a lease late (a stalled event loop, a starved machine) before a live
   * delivery's lease runs out, while deliveries shorter than 1/6 of a lease never write one.
   */
  private async extendLeases(): Promise<void> {
    const now = this.options.clock.now();
    const threshold = now + (this.options.leaseMs * 5) / 6;
    const due = [...this.inFlight.entries()].filter(([, f]) => f.leaseUntil < threshold);
    if (due.length === 0) return;
    const leaseUntil = now + this.options.leaseMs;
    try {
      const renewed = new Set(
        await this.options.executor.messageLeaseExtendMany({
          leases: due.map(([id, f]) => ({ id, leaseToken: f.leaseToken })),
          leaseUntil,
        }),
      );
      // A lease not renewed (its row busy with its outcome, or lost) is tried again next beat.
      for (const [id, flight] of due) if (renewed.has(id)) flight.leaseUntil = leaseUntil;
    } catch (error) {
      const messageIds = due.map(([id]) => id);
      this.options.logger.error({ err: error, messageIds }, 'extending leases failed');
    }
  }
}
