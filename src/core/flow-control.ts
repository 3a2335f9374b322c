/**
 * Flow control and FIFO queues as one mechanism: a *gate* orders and limits the messages that
 * belong to it. Pure functions only; the drivers call them while they hold the gate row.
 *
 * - A flow-control key (`Svc-Flow-Control-Key`) is a gate of kind `key`: at most `parallelism`
 *   attempts in flight and at most `rate` attempts started per `periodSec`. A message holds a
 *   slot for one attempt; a retry waits in the wait list again and counts against the rate again.
 * - A queue is a gate of kind `queue`: at most `parallelism` messages started and not final. A
 *   message holds its slot through its retries until it is delivered or failed, and its callback
 *   messages take over the slot until they are final too ("callbacks included").
 *
 * Waiting messages are parked out of the engine's due index; the drivers admit them per gate
 * (see docs/architecture.md "Flow control"), so a gate with a long wait list costs other
 * messages nothing.
 */
import type { Message } from './types.js';

export type FlowGateKind = 'key' | 'queue';

/**
 * `due_at` of a parked (waiting) message: later than any time a JS Date can hold (8.64e15). The
 * due-time index keeps such rows after every real time, so a claim (`due_at <= now`) never
 * reads them.
 */
export const PARKED_DUE_AT = Number.MAX_SAFE_INTEGER;

/** What a stored message asks of its gate; derived from the message at insert time. */
export interface GateRef {
  kind: FlowGateKind;
  name: string;
  /**
   * `wait`: the message joins the wait list and is admitted by the gate. `hold`: it takes a
   * queue slot at once (a callback of a queued message: the slot passes to it from its source).
   */
  mode: 'wait' | 'hold';
  /** The key's limits from this publish (kind `key` only). */
  parallelism?: number;
  rate?: number;
  periodSec?: number;
}

/**
 * The gate of a message, if any. A queue wins over a flow-control key on the same message: the
 * queue orders it and the key is recorded but not enforced (one gate per message).
 */
export function gateOf(message: Message): GateRef | undefined {
  if (message.queueName !== undefined) {
    return { kind: 'queue', name: message.queueName, mode: 'wait' };
  }
  if (message.spec.holdsQueue !== undefined) {
    return { kind: 'queue', name: message.spec.holdsQueue, mode: 'hold' };
  }
  const fc = message.spec.flowControl;
  if (!fc) return undefined;
  const ref: GateRef = { kind: 'key', name: fc.key, mode: 'wait', periodSec: fc.periodSec ?? 1 };
  if (fc.parallelism !== undefined) ref.parallelism = fc.parallelism;
  if (fc.rate !== undefined) ref.rate = fc.rate;
  return ref;
}

/** A gate as stored, with its counts. Times are ms. */
export interface FlowGate {
  accountId: string;
  kind: FlowGateKind;
  name: string;
  /** Absent: no limit on attempts in flight (a key given only a rate). */
  parallelism?: number;
  /** Absent: no rate limit. */
  rate?: number;
  periodSec: number;
  pinnedParallelism: boolean;
  pinnedRate: boolean;
  paused: boolean;
  /** Attempts started in the current rate period. */
  rateCount: number;
  /** Start of the current rate period, ms (0 before the first admission). */
  ratePeriodStart: number;
  createdAt: number;
  updatedAt: number;
  /** Messages waiting to be admitted. */
  waitListSize: number;
  /** Messages holding a slot (key: attempts in flight; queue: started and not final). */
  parallelismCount: number;
}

/** The rate state of a gate at `now`: a fixed window that restarts once its period is over. */
export function rateWindow(
  gate: Pick<FlowGate, 'rate' | 'periodSec' | 'rateCount' | 'ratePeriodStart'>,
  now: number,
): { rateCount: number; ratePeriodStart: number } {
  if (gate.rate === undefined) return { rateCount: 0, ratePeriodStart: gate.ratePeriodStart };
  if (now >= gate.ratePeriodStart + gate.periodSec * 1000) {
    return { rateCount: 0, ratePeriodStart: now };
  }
  return { rateCount: gate.rateCount, ratePeriodStart: gate.ratePeriodStart };
}

export interface AdmissionPlan {
  /** How many waiting messages may start now. */
  take: number;
  rateCount: number;
  ratePeriodStart: number;
}

/**
 * How many waiting messages a gate may admit at `now`, given the messages holding a slot.
 * `max` bounds one round (the rest waits for the next round, which the ready time asks for).
 */
export function planAdmission(
  gate: Pick<
    FlowGate,
    'parallelism' | 'rate' | 'periodSec' | 'rateCount' | 'ratePeriodStart' | 'paused'
  >,
  holders: number,
  now: number,
  max: number,
): AdmissionPlan {
  const window = rateWindow(gate, now);
  if (gate.paused) return { take: 0, ...window };
  const slots = gate.parallelism === undefined ? Infinity : gate.parallelism - holders;
  const budget = gate.rate === undefined ? Infinity : gate.rate - window.rateCount;
  return { take: Math.max(0, Math.min(slots, budget, max)), ...window };
}

/**
 * When the gate must be looked at again (its `ready_at`), after a round that left `holders`
 * slots taken and whose first remaining waiting message is due at `nextWaitDue` (undefined
 * when none waits). Undefined means "not until something changes": a release, a publish, a
 * resume or a pin sets the ready time again.
 */
export function nextReadyAt(p: {
  gate: Pick<FlowGate, 'parallelism' | 'rate' | 'periodSec' | 'paused'>;
  holders: number;
  rateCount: number;
  ratePeriodStart: number;
  nextWaitDue: number | undefined;
  now: number;
}): number | undefined {
  const { gate } = p;
  if (gate.paused || p.nextWaitDue === undefined) return undefined;
  if (gate.parallelism !== undefined && p.holders >= gate.parallelism) return undefined;
  const periodEnd = p.ratePeriodStart + gate.periodSec * 1000;
  if (gate.rate !== undefined && p.rateCount >= gate.rate && periodEnd > p.now) {
    return Math.max(periodEnd, p.nextWaitDue);
  }
  return p.nextWaitDue;
}

/** Queue names, as QStash: letters, digits, `-`, `_` and `.`. */
export const QUEUE_NAME = /^[A-Za-z0-9._-]{1,200}$/;

/** The API's FlowControlKey object (times in seconds, as the QStash API). */
export function flowControlKeyView(gate: FlowGate): Record<string, unknown> {
  return {
    flowControlKey: gate.name,
    waitListSize: gate.waitListSize,
    parallelismMax: gate.parallelism ?? 0,
    parallelismCount: gate.parallelismCount,
    rateMax: gate.rate ?? 0,
    rateCount: gate.rateCount,
    ratePeriod: gate.periodSec,
    ratePeriodStart: Math.floor(gate.ratePeriodStart / 1000),
    isPinnedParallelism: gate.pinnedParallelism,
    isPinnedRate: gate.pinnedRate,
    isPaused: gate.paused,
  };
}

/** The API's Queue object; `lag` is the number of messages waiting to start. */
export function queueView(gate: FlowGate): Record<string, unknown> {
  return {
    name: gate.name,
    createdAt: gate.createdAt,
    updatedAt: gate.updatedAt,
    parallelism: gate.parallelism ?? 1,
    paused: gate.paused,
    lag: gate.waitListSize,
  };
}
