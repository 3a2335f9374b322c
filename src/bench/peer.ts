/**
 * The benchmark's peer: BullMQ on a Redis of its own, the queue users would wire up themselves
 * instead of Ferry. `startRedis` runs `redis-server` with the append-only file fsynced every
 * second (a temporary directory, a free port on 127.0.0.1) and stops it by its PID, also when the
 * benchmark fails. `startPeer` adds a BullMQ `Queue` (jobs are added from the benchmark process,
 * a library call with no HTTP ingress) and a consumer process (peer-worker.ts) that POSTs each
 * job's body to the same receiver Ferry delivers to.
 */
import { fork, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { Queue } from 'bullmq';

export interface Redis {
  port: number;
  pid: number;
  stop(): Promise<void>;
}

/** Whether `redis-server` can be started (the peer rows are skipped without it). */
export function redisAvailable(): boolean {
  const probe = spawnSync('redis-server', ['--version'], { stdio: 'ignore' });
  return probe.error === undefined && probe.status === 0;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** A process's CPU seconds from /proc (Linux); NaN where there is none. */
export function processCpuSeconds(pid: number | undefined): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    // utime and stime are fields 14 and 15 of stat(5), counted from 1 with the pid; in clock
    // ticks, 100 per second on Linux.
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return NaN;
  }
}

/**
 * Bytes a process has caused to be written to storage so far (`write_bytes` of /proc/<pid>/io,
 * Linux: counted as pages are dirtied, so a file rewritten in the page cache counts each time);
 * NaN where there is none.
 */
export function processWriteBytes(pid: number | undefined): number {
  try {
    const line = /^write_bytes: (\d+)$/m.exec(readFileSync(`/proc/${pid}/io`, 'utf8'));
    return line ? Number(line[1]) : NaN;
  } catch {
    return NaN;
  }
}

/**
 * CPU seconds (user + system) of every `postgres` process on this machine, with what the ones
 * that exited left in their parent's count (a backend that ends is added to the postmaster's):
 * the server's work, whoever asked for it, so only meaningful while nothing else uses it. NaN
 * where /proc is not readable; 0 when the server runs elsewhere.
 */
export function postgresServerCpuSeconds(): number {
  const processes = postgresProcesses();
  if (processes === undefined) return NaN;
  let ticks = 0;
  for (const { stat } of processes) {
    // utime, stime, cutime and cstime: fields 14 to 17 of stat(5).
    const fields = stat.slice(stat.lastIndexOf(') ') + 2).split(' ');
    ticks += [11, 12, 13, 14].reduce((sum, i) => sum + Number(fields[i]), 0);
  }
  return ticks / 100;
}

/** Every `postgres` process on this machine and its /proc stat line; undefined without /proc. */
function postgresProcesses(): { pid: number; stat: string }[] | undefined {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return undefined;
  }
  const found: { pid: number; stat: string }[] = [];
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')) !== 'postgres') continue;
      found.push({ pid: Number(entry), stat });
    } catch {
      // The process ended meanwhile.
    }
  }
  return found;
}

/** The ids of the `postgres` processes running now (see postgresRunNanos). */
export const postgresPids = (): number[] => (postgresProcesses() ?? []).map((p) => p.pid);

/**
 * Nanoseconds the processes `pids` have run on a CPU so far (`/proc/<pid>/schedstat`, exact
 * where the tick-counted stat(5) times step by 10 ms): for splitting the server's work between
 * steps a millisecond or two long. A process that ended counts 0.
 */
export function postgresRunNanos(pids: readonly number[]): number {
  let nanos = 0;
  for (const pid of pids) {
    try {
      nanos += Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      // The process ended meanwhile.
    }
  }
  return nanos;
}

/**
 * CPU seconds (user + system) of each thread of process `pid`: `main`, and every other thread as
 * its name and id (`node 1234`: on Node 20 the delivery thread, V8's helper threads (GC, the
 * optimizing compiler) and libuv's pool (fsyncs) are all named `node`). Empty where /proc is not
 * readable.
 */
export function threadCpuSeconds(pid: number | undefined): Map<string, number> {
  const out = new Map<string, number>();
  let tasks: string[] = [];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const task of tasks) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${task}/stat`, 'utf8');
      const name =
        task === String(pid)
          ? 'main'
          : `${stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'))} ${task}`;
      const fields = stat.slice(stat.lastIndexOf(') ') + 2).split(' ');
      const seconds = (Number(fields[11]) + Number(fields[12])) / 100;
      out.set(name, (out.get(name) ?? 0) + seconds);
    } catch {
      // The thread ended meanwhile.
    }
  }
  return out;
}

/** Starts redis-server with AOF `everysec` in a temporary directory; see the file comment. */
export async function startRedis(): Promise<Redis> {
  const dir = mkdtempSync(join(tmpdir(), 'ferry-bench-redis-'));
  const port = await freePort();
  const proc: ChildProcess = spawn(
    'redis-server',
    [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--dir',
      dir,
      '--appendonly',
      'yes',
      '--appendfsync',
      'everysec',
      // No RDB snapshots: the append-only file is the persistence being compared.
      '--save',
      '',
      // BullMQ requires it (it warns otherwise): jobs must never be evicted.
      '--maxmemory-policy',
      'noeviction',
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const pid = proc.pid as number;
  // Stopped by its PID whatever happens to the benchmark (an exception ends in process.exit).
  const killOnExit = (): void => {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  };
  process.on('exit', killOnExit);
  const exited = new Promise((resolve) => proc.on('exit', resolve));
  await new Promise<void>((resolve, reject) => {
    let out = '';
    proc.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('Ready to accept connections')) resolve();
    });
    proc.on('exit', (code) => reject(new Error(`redis-server exited with ${code}: ${out}`)));
  });
  return {
    port,
    pid,
    async stop() {
      process.kill(pid, 'SIGTERM');
      await exited;
      process.off('exit', killOnExit);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface Peer {
  /** Adds one job whose body the consumer POSTs to `url`. */
  add(url: string, body: string): Promise<void>;
  /** CPU seconds used so far by the consumer process and redis-server together. */
  cpuSeconds(): number;
  stop(): Promise<void>;
}

/** A fresh queue on `redis` and its consumer process with `concurrency` jobs at a time. */
export async function startPeer(redis: Redis, concurrency: number): Promise<Peer> {
  const name = `bench-${randomBytes(4).toString('hex')}`;
  const connection = { host: '127.0.0.1', port: redis.port };
  const queue = new Queue(name, { connection });
  await queue.waitUntilReady();
  const worker = fork(
    new URL('./peer-worker.js', import.meta.url).pathname,
    [String(redis.port), name, String(concurrency)],
    { stdio: 'inherit' },
  );
  await new Promise<void>((resolve, reject) => {
    worker.once('message', () => resolve());
    worker.once('exit', (code) => reject(new Error(`the BullMQ worker exited with ${code}`)));
  });
  return {
    async add(url, body) {
      // Completed jobs are removed as Ferry removes delivered messages; Ferry's default retries.
      await queue.add(
        'deliver',
        { url, body },
        {
          removeOnComplete: true,
          removeOnFail: true,
          attempts: 4,
          backoff: { type: 'exponential', delay: 1000 },
        },
      );
    },
    cpuSeconds: () => processCpuSeconds(worker.pid) + processCpuSeconds(redis.pid),
    async stop() {
      const exited = new Promise((resolve) => worker.on('exit', resolve));
      worker.send({ type: 'stop' });
      await exited;
      await queue.obliterate({ force: true });
      await queue.close();
    },
  };
}
