/** The messages between the main thread and the delivery thread (worker-dispatcher.ts). */
import type { AttemptResult } from '../core/retry-timing.js';
import type { DispatchRequest } from './dispatcher.js';

/** A send as it crosses threads: everything but its abort, which stays with the main thread. */
export type WorkerRequest = Omit<DispatchRequest, 'abort'>;

export type ToWorker =
  | { type: 'send'; sends: { id: number; request: WorkerRequest }[] }
  | { type: 'abort'; id: number }
  | { type: 'close' };

export interface WorkerResult {
  id: number;
  attempt: AttemptResult;
}

export type ToMain = { type: 'results'; results: WorkerResult[] };
