/**
 * The HTTP dispatcher on a thread of its own.
 *
 * On the main thread, each delivery's HTTP exchange (connection handling, request writing,
 * response parsing, reading the body) costs about as much CPU as storing the message and its
 * events. Node runs all of it on one thread, so on a machine with a second core the main thread
 * is the bottleneck while that core idles. This dispatcher moves the exchange to a worker thread
 * that runs the ordinary HTTP dispatcher (dispatcher.ts); the main thread keeps storage, the API
 * and the engine's decisions. Sends made in one turn of the event loop cross in one message, and
 * results come back the same way, so the cost of crossing stays small next to the work moved.
 *
 * If the worker dies, every send it held resolves as a failed attempt (retried as usual) and the
 * next send starts a new worker.
 */
import type { DeliveryAbort } from './delivery-abort.js';
import { Worker } from 'node:worker_threads';
import type { AttemptResult } from '../core/retry-timing.js';
import type { DispatchRequest, Dispatcher, HttpDispatcherOptions } from './dispatcher.js';
import type { ToMain, ToWorker, WorkerRequest } from './worker-protocol.js';
import { workerScript } from '../worker-script.js';

interface Pending {
  resolve: (attempt: AttemptResult) => void;
  abort?: DeliveryAbort;
  onAbort?: () => void;
}

export interface WorkerDispatcher extends Dispatcher {
  /**
   * Ends the delivery thread at once, as a crash would (tests): the sends it held resolve as
   * failed attempts, and the next send starts a new thread.
   */
  killThread(): Promise<void>;
}

export function createWorkerDispatcher(options: HttpDispatcherOptions): WorkerDispatcher {
  const script = workerScript('engine/dispatch-worker.js');
  const pending = new Map<number, Pending>();
  let nextId = 1;
  let worker: Worker | undefined;
  let outbox: { id: number; request: WorkerRequest }[] = [];
  let closed = false;

  const settle = (id: number, attempt: AttemptResult): void => {
    const entry = pending.get(id);
    if (!entry) return;
    pending.delete(id);
    if (pending.size === 0) worker?.unref();
    if (entry.onAbort) entry.abort?.off(entry.onAbort);
    entry.resolve(attempt);
  };

  const start = (): Worker => {
    const started = new Worker(script, { workerData: options });
    started.on('message', (message: ToMain) => {
      for (const { id, attempt } of message.results) settle(id, attempt);
    });
    const lost = (reason: string): void => {
      if (worker !== started) return;
      worker = undefined;
      for (const id of [...pending.keys()]) {
        settle(id, { kind: 'error', error: `delivery thread stopped: ${reason}` });
      }
    };
    started.on('error', (error) => lost(error.message));
    started.on('exit', (code) => lost(`exit code ${code}`));
    return started;
  };

  const post = (message: ToWorker): void => {
    worker ??= start();
    worker.postMessage(message);
  };

  const flush = (): void => {
    if (outbox.length === 0) return; // an abort sent them already
    const sends = outbox;
    outbox = [];
    post({ type: 'send', sends });
  };

  return {
    // A thread takes a moment to load (~0.3 s of CPU, mostly undici): a delivering node starts
    // it with the node rather than at the first send, which should not wait for that.
    warm(): void {
      if (closed || worker) return;
      worker = start();
      worker.unref();
    },
    send(req: DispatchRequest): Promise<AttemptResult> {
      if (closed) return Promise.resolve({ kind: 'error', error: 'dispatcher closed' });
      const id = nextId++;
      const { abort, ...request } = req;
      return new Promise<AttemptResult>((resolve) => {
        const entry: Pending = { resolve, abort };
        if (abort) {
          if (abort.aborted) {
            resolve({ kind: 'error', error: 'attempt aborted by shutdown' });
            return;
          }
          entry.onAbort = () => {
            flush(); // the thread must have the send before its abort
            post({ type: 'abort', id });
          };
          abort.on(entry.onAbort);
        }
        pending.set(id, entry);
        // An idle worker does not keep the process alive; a pending send does.
        if (pending.size === 1) (worker ??= start()).ref();
        outbox.push({ id, request });
        // Sent after this turn's I/O callbacks: every send of the turn in one message (each
        // message wakes the delivery thread; fewer, larger ones cost less on both threads).
        if (outbox.length === 1) setImmediate(flush);
      });
    },
    async killThread(): Promise<void> {
      await worker?.terminate();
    },
    async close(): Promise<void> {
      closed = true;
      const running = worker;
      if (!running) return;
      // Nothing in flight: no exchange to finish, and a thread still loading need not finish
      // loading first.
      if (pending.size === 0) {
        await running.terminate();
        return;
      }
      const exited = new Promise((resolve) => running.once('exit', resolve));
      running.postMessage({ type: 'close' } satisfies ToWorker);
      await exited;
    },
  };
}
