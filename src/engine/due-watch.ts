/**
 * Sees every write that makes a message due, whoever writes it. The engine sleeps until the
 * next due time it read, and a write committed after that read (a retry's new due time, a
 * callback's retry, a release, a DLQ retry, a workflow step, a publish, a gate made ready) may be
 * due sooner. Rather than each writer remembering to wake the engine, the executor every part of
 * the process uses is wrapped once (in app.ts): the operations of the storage contract that set a
 * due time report it from their params and results, and the earliest due time of a transaction
 * is reported once it has committed (before its fsync, like the publisher's wake-up used to be).
 */
import { gateOf, type FlowGate } from '../core/flow-control.js';
import { isLeased, type Message } from '../core/types.js';
import type {
  Executor,
  MessageInsertManyParams,
  MessagePublishManyParams,
  MessageReleaseManyParams,
  MessageRetryManyParams,
  TransactionOptions,
} from '../storage/driver.js';

/** Called with the earliest due time (ms) a committed write made; 0 means "now". */
export type DueListener = (dueAt: number) => void;

/**
 * Per operation: the earliest due time its write made, from its params and result, or
 * undefined when it made nothing due. Every contract operation that lowers a message's `dueAt`
 * or a flow-control gate's ready time is named here; the rest only delay or delete.
 * (A holder's delete, `messageDeleteLeasedMany`, also makes its gate ready: the engine that
 * wrote it claims again itself when the attempt was gated.)
 */
const DUE_OF: { [K in keyof Executor]?: (params: never, result: never) => number | undefined } = {
  messageInsertMany: (p: MessageInsertManyParams) => earliestUnleased(p.messages),
  // A message given leased that was stored unleased (its account at its limit) is due from its
  // creation (see MessagePublishManyParams.leaseLimits).
  messagePublishMany: (p: MessagePublishManyParams, leased: string[]) => {
    const kept = new Set(leased);
    return earliest(
      p.messages.flatMap((m) => (kept.has(m.id) ? [] : [isLeased(m) ? m.createdAt : m.dueAt])),
    );
  },
  messageRetryManyLeased: (p: MessageRetryManyParams, applied: string[]) =>
    applied.length > 0 ? earliest(p.retries.map((r) => r.dueAt)) : undefined,
  messageReleaseMany: (p: MessageReleaseManyParams, applied: string[]) =>
    applied.length > 0 ? p.dueAt : undefined,
  // A cancelled message of a key or queue may free a slot: its gate admits again.
  messageDeleteMany: (_: unknown, deleted: Message[]) =>
    deleted.some((m) => gateOf(m) !== undefined) ? 0 : undefined,
  // New limits (or a resume) make the gate ready.
  flowGateUpdate: (_: unknown, gate: FlowGate | undefined) => (gate ? 0 : undefined),
  queueUpsert: () => 0,
};

/**
 * The earliest due time of messages stored unleased. One stored leased was handed to this node's
 * engine (Engine.reserve): it is being delivered, and due for no one else.
 */
function earliestUnleased(messages: readonly Message[]): number | undefined {
  return earliest(messages.filter((m) => !isLeased(m)).map((m) => m.dueAt));
}

function earliest(times: number[]): number | undefined {
  let min: number | undefined;
  for (const t of times) if (min === undefined || t < min) min = t;
  return min;
}

/**
 * The executor with due-time reporting: `onDue` is called after each commit that made something
 * due (once per transaction, with its earliest time; an operation outside a transaction commits
 * by itself).
 */
export function watchDueTimes(executor: Executor, onDue: DueListener): Executor {
  return wrap(executor, onDue, false);
}

function wrap(target: Executor, report: DueListener, inTransaction: boolean): Executor {
  const cache = new Map<PropertyKey, unknown>();
  const transaction = <T>(
    fn: (tx: Executor) => Promise<T>,
    options?: TransactionOptions,
  ): Promise<T> => {
    // Nested: the outer transaction's commit reports.
    if (inTransaction) return target.transaction((tx) => fn(wrap(tx, report, true)), options);
    let due: number | undefined;
    const collect: DueListener = (t) => {
      if (due === undefined || t < due) due = t;
    };
    return target.transaction((tx) => fn(wrap(tx, collect, true)), {
      ...options,
      onCommit: () => {
        options?.onCommit?.();
        if (due !== undefined) report(due);
      },
    });
  };
  return new Proxy(target, {
    get(object, property) {
      if (property === 'transaction') return transaction;
      let value = cache.get(property);
      if (value !== undefined) return value;
      const original = Reflect.get(object, property) as unknown;
      if (typeof original !== 'function') return original;
      const dueOf = DUE_OF[property as keyof Executor] as
        ((params: unknown, result: unknown) => number | undefined) | undefined;
      const bound = (original as (...args: unknown[]) => unknown).bind(object);
      value = dueOf
        ? async (params: unknown) => {
            const result = await (bound(params) as Promise<unknown>);
            const due = dueOf(params, result);
            if (due !== undefined) report(due);
            return result;
          }
        : bound;
      cache.set(property, value);
      return value;
    },
  });
}
