/**
 * The peer's consumer, a process of its own as Ferry is: a BullMQ `Worker` on the benchmark's
 * Redis that POSTs each job's body to the benchmark's receiver (undici, keep-alive, the way
 * Ferry's dispatcher sends) and completes the job when the receiver answers 2xx. Started by
 * peer.ts with the Redis port, the queue name and the concurrency; reports `ready` over IPC and
 * exits on `stop`.
 */
import { Worker } from 'bullmq';
import { receiverPoster, serveParent } from './peer-consumer.js';

const [port, queue, concurrencyText] = process.argv.slice(2);
const concurrency = Number(concurrencyText);
const poster = receiverPoster(concurrency);

const worker = new Worker<{ url: string; body: string }>(
  queue as string,
  (job) => poster.post(job.data.url, job.data.body),
  {
    connection: { host: '127.0.0.1', port: Number(port) },
    concurrency,
    autorun: true,
  },
);

void worker.waitUntilReady().then(() =>
  serveParent(async () => {
    await worker.close();
    await poster.close();
  }),
);
