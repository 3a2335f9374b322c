/**
 * The delivery thread's entry point (see worker-dispatcher.ts): runs the HTTP dispatcher and
 * answers the main thread's sends, batched both ways.
 */
import { DeliveryAbort } from './delivery-abort.js';
import { parentPort, workerData } from 'node:worker_threads';
import { createHttpDispatcher, type HttpDispatcherOptions } from './dispatcher.js';
import type { ToMain, ToWorker, WorkerResult } from './worker-protocol.js';

if (!parentPort) throw new Error('dispatch-worker.js runs as a worker thread only');
const port = parentPort;

const dispatcher = createHttpDispatcher(workerData as HttpDispatcherOptions);
const aborts = new Map<number, DeliveryAbort>();
let results: WorkerResult[] = [];

/** Results that finish in one turn of the loop go back in one message. */
function answer(result: WorkerResult): void {
  results.push(result);
  if (results.length > 1) return;
  setImmediate(() => {
    const batch = results;
    results = [];
    port.postMessage({ type: 'results', results: batch } satisfies ToMain);
  });
}

port.on('message', (message: ToWorker) => {
  switch (message.type) {
    case 'send':
      for (const { id, request } of message.sends) {
        const abort = new DeliveryAbort();
        aborts.set(id, abort);
        void dispatcher.send({ ...request, abort }).then((attempt) => {
          aborts.delete(id);
          answer({ id, attempt });
        });
      }
      break;
    case 'abort':
      aborts.get(message.id)?.abort();
      break;
    case 'close':
      void dispatcher.close().then(() => port.close());
      break;
  }
});
