/**
 * The PostgreSQL peer's consumer, a process of its own as Ferry is: graphile-worker's runner on
 * the benchmark's schema, POSTing each job's body to the benchmark's receiver (undici, keep-alive,
 * the way Ferry's dispatcher sends) and completing the job when the receiver answers 2xx. With
 * its batching on, as graphile-worker's performance guide recommends for throughput: jobs are
 * fetched `concurrency` at a time (`localQueue`) and completions are written together
 * (`completeJobBatchDelay: 0`). Started by graphile-peer.ts with the database URL, the schema and
 * the concurrency; reports `ready` over IPC and exits on `stop`.
 */
import { run } from 'graphile-worker';
import { silentLogger } from './graphile-peer.js';
import { receiverPoster, serveParent } from './peer-consumer.js';

const [connectionString, schema, concurrencyText] = process.argv.slice(2);
const concurrency = Number(concurrencyText);
const poster = receiverPoster(concurrency);

const runner = await run({
  connectionString,
  schema,
  concurrency,
  maxPoolSize: concurrency + 2,
  noHandleSignals: true,
  logger: silentLogger,
  preset: {
    worker: { localQueue: { size: concurrency }, completeJobBatchDelay: 0 },
  },
  taskList: {
    deliver(payload) {
      const { url, body } = payload as { url: string; body: string };
      return poster.post(url, body);
    },
  },
});

serveParent(async () => {
  await runner.stop();
  await poster.close();
});
