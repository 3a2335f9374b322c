/**
 * The peer's consumer, a process of its own as Ferry is: a BullMQ `Worker` on the benchmark's
 * Redis that POSTs each job's body to the benchmark's receiver (undici, keep-alive, the way
 * Ferry's dispatcher sends) and completes the job when the receiver answers 2xx. Started by
 * peer.ts with the Redis port, the queue name and the concurrency; reports `ready` over IPC and
 * exits on `stop`.
 */
import { Worker } from 'bullmq';
import { Agent, request } from 'undici';

const [port, queue, concurrencyText] = process.argv.slice(2);
const concurrency = Number(concurrencyText);
const agent = new Agent({ connections: concurrency, pipelining: 1 });

const worker = new Worker<{ url: string; body: string }>(
  queue as string,
  async (job) => {
    const res = await request(job.data.url, {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: job.data.body,
      dispatcher: agent,
    });
    await res.body.dump();
    if (res.statusCode < 200 || res.statusCode > 299) {
      throw new Error(`destination answered ${res.statusCode}`);
    }
  },
  {
    connection: { host: '127.0.0.1', port: Number(port) },
    concurrency,
    autorun: true,
  },
);

void worker.waitUntilReady().then(() => process.send?.({ type: 'ready' }));
process.on('message', (message: { type: string }) => {
  if (message.type !== 'stop') return;
  void worker
    .close()
    .then(() => agent.close())
    .then(() => process.exit(0));
});
