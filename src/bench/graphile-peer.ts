/**
 * The benchmark's PostgreSQL peer: graphile-worker, the job queue a user of PostgreSQL would wire
 * up instead of Ferry (issue 16 compares Ferry on PostgreSQL with it). `startGraphilePeer`
 * migrates a schema of its own in TEST_DATABASE_URL's database, adds jobs from the benchmark
 * process (`addJob`, a library call with no HTTP ingress, one transaction each) and forks a
 * consumer process (graphile-worker-process.ts) that POSTs each job's body to the same receiver
 * Ferry delivers to. The schema is dropped when the peer stops.
 */
import { fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { Logger, makeWorkerUtils } from 'graphile-worker';
import type { Peer } from './peer.js';
import { processCpuSeconds } from './peer.js';

/** graphile-worker's log lines (one per job at `info`) would drown the benchmark's output. */
export const silentLogger = new Logger(() => () => undefined);

/** A fresh graphile-worker schema on `databaseUrl` and its consumer process. */
export async function startGraphilePeer(databaseUrl: string, concurrency: number): Promise<Peer> {
  const schema = `graphile_bench_${randomBytes(4).toString('hex')}`;
  const utils = await makeWorkerUtils({
    connectionString: databaseUrl,
    schema,
    logger: silentLogger,
  });
  await utils.migrate();
  const worker = fork(
    new URL('./graphile-worker-process.js', import.meta.url).pathname,
    [databaseUrl, schema, String(concurrency)],
    { stdio: 'inherit' },
  );
  await new Promise<void>((resolve, reject) => {
    worker.once('message', () => resolve());
    worker.once('exit', (code) =>
      reject(new Error(`the graphile-worker consumer exited with ${code}`)),
    );
  });
  return {
    async add(url, body) {
      // Ferry's default retries; graphile-worker deletes a job once it succeeds.
      await utils.addJob('deliver', { url, body }, { maxAttempts: 4 });
    },
    cpuSeconds: () => processCpuSeconds(worker.pid),
    async stop() {
      const exited = new Promise((resolve) => worker.on('exit', resolve));
      worker.send({ type: 'stop' });
      await exited;
      await utils.withPgClient((client) => client.query(`DROP SCHEMA "${schema}" CASCADE`));
      await utils.release();
    },
  };
}
