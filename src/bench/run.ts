/**
 * `npm run bench`: measures Ferry as a user runs it. Ferry runs as a child process (the built
 * `ferry start`, fresh data directory per case); this process is the load generator and the
 * receiver, both on 127.0.0.1. Prints a Markdown table and the method.
 *
 * Cases, per storage (SQLite always; PostgreSQL when TEST_DATABASE_URL is set):
 * - publish, 1 client sequential: N publishes one after another (delayed 1 day, so no delivery
 *   competes), publishes/s and latency;
 * - publish, 50 concurrent clients: the same with 50 connections in parallel;
 * - end to end: N publishes from 200 concurrent clients (enough that publishing, which waits for
 *   a durable commit per request, does not cap the delivery rate), timed from the first publish
 *   until the receiver has all N; deliveries run while publishing;
 * - latency at 500 msg/s: publishes paced at a steady rate; publish→receive p50/p99 measured at
 *   the receiver from a timestamp in the body;
 * - fan-out: publishes to a URL group of 100 endpoints from 10 clients, timed until the receiver
 *   has every endpoint's message;
 * - batch: `POST /v2/batch` of 100 delayed messages each, from 10 clients: messages stored/s;
 * - schedule lateness: 1,000 schedules all due on the same minute (`<m> <h> * * *`); tick→receive
 *   p50/p99 measured at the receiver from the tick time written into each schedule's body. Waits
 *   for a minute boundary at least 20 s after the schedules were created (up to ~80 s).
 *
 * - workflow: 5-step runs of the official `@upstash/workflow` SDK against Ferry in Upstash mode:
 *   runs completed per second (20 started at a time), and the time per step of runs one at a time.
 *
 * - reference: a bare POST loop to the receiver without Ferry, the machine's pace at the time.
 *
 * - peers: the end-to-end and latency cases also run BullMQ on a Redis of the benchmark's own
 *   (peer.ts) and, when PostgreSQL runs, graphile-worker (graphile-peer.ts), interleaved with
 *   Ferry's runs `--reps` times, with Ferry's ratios to them;
 * - backlog (`--case backlog` only): the end-to-end and latency cases on a store holding
 *   `--backlog` (1,000,000) delayed messages against an empty store, interleaved.
 * - storage (`--case storage` only): the storage work of a delivered message in this process,
 *   CPU per message of the publish, claim and finish steps (storage-case.ts).
 *
 * Options: `--quick` (smaller N), `--only sqlite|postgres`, `--reps N` (default 3),
 * `--backlog N`, `--case reference|publish|e2e|flow|latency|fanout|batch|schedule|workflow|backlog|storage`,
 * `--baseline DIR` (the end-to-end, latency and storage cases also run the Ferry build in DIR,
 * interleaved, to compare two builds), `--no-peer` (no peer rows), `--warm N` (the end-to-end case first delivers N
 * messages unmeasured, for Ferry and BullMQ alike);
 * env `FERRY_BENCH_NODE_FLAGS` (flags for Ferry's node, e.g. `--cpu-prof`),
 * `FERRY_BENCH_LATENCY_TRACE` (a file: every measured request's send time and delay, receiver.ts).
 */
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import postgres, { type Sql } from 'postgres';
import { startWorkflowEndpoint, triggerRuns, WORKFLOW_STEPS } from './workflow.js';
import { Pool } from 'undici';
import { loadConfig, type Config } from '../cli/config.js';
import { newMessageId } from '../core/ids.js';
import type { Message } from '../core/types.js';
import type { Driver } from '../storage/driver.js';
import { openPostgresDriver } from '../storage/postgres/postgres-driver.js';
import { openSqliteDriver } from '../storage/sqlite/sqlite-driver.js';
import {
  postgresServerCpuSeconds,
  processCpuSeconds,
  processWriteBytes,
  threadCpuSeconds,
  redisAvailable,
  startPeer,
  startRedis,
  type Peer,
  type Redis,
} from './peer.js';
import { startGraphilePeer } from './graphile-peer.js';
import { oneOf, scriptArgs, usageError, wholeNumber } from './script-args.js';
import { bodyMaker } from './body.js';
import { describeStorageRun, loadBuild, runStorage, type StorageRun } from './storage-case.js';

const MAIN = new URL('../cli/main.js', import.meta.url).pathname;
const USAGE = `Usage: npm run bench -- [options]

  --case NAME      one case: reference, publish, e2e, flow, latency, fanout, batch, schedule,
                   workflow, backlog or storage (default: all but backlog and storage)
  --only STORAGE   sqlite or postgres (PostgreSQL runs when TEST_DATABASE_URL is set)
  --quick          smaller N
  --reps N         interleaved repetitions of the end-to-end, latency, backlog and storage cases (3)
  --backlog N      delayed messages seeded for the backlog case (1000000)
  --baseline DIR   also run the Ferry build in DIR, interleaved (either first in half of the
                   repetitions), in the end-to-end, latency and storage cases; the end-to-end
                   case adds a row of this build's figures over the baseline's, pair by pair
  --no-peer        leave out the peers (BullMQ, graphile-worker)
  --warm N         deliver N messages unmeasured before the end-to-end case's measured part
  --body BYTES     size of each message's body in every case but the reference loop (default:
                   about 110 bytes; e.g. 1024 or 8192 for the payloads of typical webhooks)
  --help           this text

Environment: TEST_DATABASE_URL (PostgreSQL cases), FERRY_BENCH_NODE_FLAGS (flags for Ferry's node),
FERRY_BENCH_LATENCY_TRACE (a file to append each request's send time and delay to).
The method of each case is in docs/benchmarks.md.`;
const args = scriptArgs(
  {
    quick: { type: 'boolean' },
    reps: { type: 'string' },
    backlog: { type: 'string' },
    baseline: { type: 'string' },
    warm: { type: 'string' },
    body: { type: 'string' },
    'no-peer': { type: 'boolean' },
    only: { type: 'string' },
    case: { type: 'string' },
  },
  USAGE,
);
/** Deliveries Ferry runs at once to one origin with `config` (`originConcurrency` 0: no cap). */
function perOriginInFlight(config: Config): number {
  const { concurrency, originConcurrency } = config;
  return originConcurrency === 0 ? concurrency : Math.min(originConcurrency, concurrency);
}
const quick = args.quick === true;
/** Extra flags for Ferry's node (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`), space-separated. */
const NODE_FLAGS = (process.env.FERRY_BENCH_NODE_FLAGS ?? '').split(' ').filter(Boolean);
/**
 * Jobs a peer's worker runs at a time: what Ferry has in flight to one destination origin (every
 * delivery of the benchmark goes to the one receiver), with the settings Ferry's processes get
 * here: its defaults (`--concurrency 256`, `--origin-concurrency` a quarter of it: 64), or
 * `FERRY_CONCURRENCY` / `FERRY_ORIGIN_CONCURRENCY` from the environment they inherit.
 */
const PEER_CONCURRENCY = perOriginInFlight(loadConfig([]));
/** Interleaved repetitions of the end-to-end, latency and backlog cases (`--reps N`). */
const REPS = wholeNumber(args.reps, 'reps', 3, USAGE, 1);
/** Delayed messages (due in a day) seeded into the store of the backlog case (`--backlog N`). */
const BACKLOG = wholeNumber(args.backlog, 'backlog', 1_000_000, USAGE);
/** Concurrent publishers of the end-to-end case (see the file comment). */
const E2E_PUBLISHERS = 200;
/** Interleaved pairs of runs (plain, keyed) of the flow case: its runs vary by ±20 % here. */
const FLOW_ROUNDS = 5;
/**
 * Seconds at the latency case's rate before its measurement starts (see benchLatency). A fresh
 * process on this 2-CPU machine takes about 6 s at 500 msg/s to settle (V8's optimizing compiler
 * runs on helper threads meanwhile): recorded arrival times put most of the worst 1 % of a
 * measurement that started after 2 s in its first 4 s (docs/benchmarks-log.md).
 */
const WARM_UP_SECONDS = quick ? 2 : 10;
/**
 * `--baseline DIR`: another Ferry build (a checkout with `npm run build` done) whose end-to-end
 * and latency runs alternate with this build's, so that two builds are compared under the same
 * load.
 */
const BASELINE_MAIN =
  args.baseline === undefined ? undefined : join(args.baseline, 'dist', 'cli', 'main.js');
if (BASELINE_MAIN !== undefined && !existsSync(BASELINE_MAIN)) {
  usageError(
    `--baseline ${args.baseline}: no built Ferry there (${BASELINE_MAIN} is missing)`,
    USAGE,
  );
}
/**
 * `--warm N`: before the measured part of the end-to-end case, Ferry (or BullMQ's worker) first
 * delivers N messages the same way, unmeasured. A fresh process spends its first seconds
 * compiling (V8's optimizing compiler runs on helper threads) and opening connections: a fixed
 * cost that the default figure spreads over its N messages. With a warm-up the figure is the
 * steady state of a process that has been running.
 */
const WARM = wholeNumber(args.warm, 'warm', 0, USAGE);
const warmNote = (): string =>
  WARM > 0 ? `, after ${WARM.toLocaleString('en')} warm-up messages` : '';
/** `--body BYTES`: each message's body is BYTES long (see bodyMaker); about 110 by default. */
const BODY_BYTES =
  args.body === undefined ? undefined : wholeNumber(args.body, 'body', 0, USAGE, 32);
const bodyText = bodyMaker(BODY_BYTES);
/** `--no-peer`: skip the peers (e.g. while comparing two builds of Ferry). */
const NO_PEER = args['no-peer'] === true;
const only = oneOf(args.only, 'only', ['sqlite', 'postgres'] as const, USAGE);
const onlyCase = oneOf(
  args.case,
  'case',
  [
    'reference',
    'publish',
    'e2e',
    'flow',
    'latency',
    'fanout',
    'batch',
    'schedule',
    'workflow',
    'backlog',
    'storage',
  ] as const,
  USAGE,
);
const wanted = (
  name:
    | 'reference'
    | 'publish'
    | 'e2e'
    | 'flow'
    | 'latency'
    | 'fanout'
    | 'batch'
    | 'schedule'
    | 'workflow'
    | 'backlog'
    | 'storage',
): boolean =>
  // The backlog case seeds a million messages, and the storage case measures no HTTP at all:
  // each only when asked for.
  name === 'backlog' || name === 'storage'
    ? onlyCase === name
    : !onlyCase ||
      onlyCase === name ||
      // Every throughput case is printed with the machine's pace beside it.
      (name === 'reference' && ['publish', 'e2e', 'flow', 'latency', 'backlog'].includes(onlyCase));

interface Row {
  storage: string;
  case: string;
  n: number;
  result: string;
  detail: string;
}

interface Running {
  baseUrl: string;
  token: string;
  currentSigningKey: string;
  nextSigningKey: string;
  accountId: string;
  /** CPU seconds (user + system, every thread) Ferry's process has used so far. */
  cpuSeconds(): number;
  /** The same by thread name (see threadCpuSeconds). */
  threadCpuSeconds(): Map<string, number>;
  /** Bytes Ferry's process has written to storage so far (processWriteBytes). */
  writtenBytes(): number;
  stop(): Promise<void>;
}

/**
 * The machine's CPU time so far, in ticks: all of it, what the hypervisor stole, and what was
 * idle (waiting for I/O included).
 */
function cpuTicks(): { total: number; steal: number; idle: number } {
  try {
    // The first line of /proc/stat: "cpu user nice system idle iowait irq softirq steal …".
    const fields = (readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '').trim().split(/\s+/);
    const ticks = fields.slice(1, 9).map(Number);
    return {
      total: ticks.reduce((a, b) => a + b, 0),
      steal: ticks[7] ?? NaN,
      idle: (ticks[3] ?? NaN) + (ticks[4] ?? NaN),
    };
  } catch {
    return { total: NaN, steal: NaN, idle: NaN };
  }
}

/**
 * What an end-to-end run left of the machine and what its load generator used: the machine's idle
 * share over the run (a system that keeps both CPUs busy is bound by its CPU per message; one
 * that leaves them idle, by waits), and this process's CPU per message (the publishing clients,
 * or the peer's producer calls, plus the benchmark's own bookkeeping).
 */
function machineUse(n: number): () => string {
  const ticks = cpuTicks();
  const cpu = process.cpuUsage();
  return () => {
    const after = cpuTicks();
    const idle = (after.idle - ticks.idle) / (after.total - ticks.total);
    const used = process.cpuUsage(cpu);
    const idleNote = Number.isFinite(idle) ? `machine idle ${(idle * 100).toFixed(0)} %; ` : '';
    return `; ${idleNote}load generator CPU ${Math.round((used.user + used.system) / n)} µs per message`;
  };
}

/**
 * The share of the machine's CPU time its hypervisor gave to other guests meanwhile: on this
 * shared VM it reaches a third under load, and a case run then is not comparable.
 */
function stealShare(
  before: ReturnType<typeof cpuTicks>,
  after: ReturnType<typeof cpuTicks>,
): string {
  const share = (after.steal - before.steal) / (after.total - before.total);
  return Number.isFinite(share) ? `${(share * 100).toFixed(0)} %` : 'unknown';
}

/**
 * Where a Ferry keeps its data: a data directory, and with PostgreSQL a schema and the secret key
 * its credentials are sealed with. A store made by `newStore` outlives the Ferry processes started
 * on it (the backlog case restarts Ferry on a seeded store); `dropStore` removes it.
 */
interface Store {
  storage: 'sqlite' | 'postgres';
  dataDir: string;
  schema?: string;
  secretKey?: string;
}

function newStore(storage: 'sqlite' | 'postgres'): Store {
  const dataDir = mkdtempSync(join(tmpdir(), 'ferry-bench-'));
  // The benchmarks measure throughput far beyond the paid plan's 1,000 requests per second:
  // lift that limit (docs/limits.md) so they measure delivery, not the rate limiter's 429s.
  writeFileSync(
    join(dataDir, 'plans.json'),
    JSON.stringify({ paid: { max_requests_per_second: 0 } }),
  );
  if (storage === 'sqlite') return { storage, dataDir };
  return {
    storage,
    dataDir,
    schema: `ferry_bench_${randomBytes(4).toString('hex')}`,
    // Required with PostgreSQL (seals stored credentials); any key does for a benchmark.
    secretKey: randomBytes(32).toString('base64'),
  };
}

async function dropStore(store: Store): Promise<void> {
  rmSync(store.dataDir, { recursive: true, force: true });
  const schema = store.schema;
  if (schema) await withSql(async (sql) => sql.unsafe(`DROP SCHEMA ${schema} CASCADE`));
}

/** Starts Ferry on a fresh store (removed at stop) or on `store` (kept). */
async function startFerry(
  storage: 'sqlite' | 'postgres',
  extra: string[] = [],
  kept?: Store,
  main = MAIN,
): Promise<Running> {
  const store = kept ?? newStore(storage);
  const args = [
    main,
    'start',
    '--port',
    '0',
    '--data-dir',
    store.dataDir,
    '--log-level',
    'error',
    '--plans-file',
    join(store.dataDir, 'plans.json'),
    ...extra,
  ];
  if (store.schema && store.secretKey) {
    args.push(
      '--database-url',
      process.env.TEST_DATABASE_URL as string,
      '--database-schema',
      store.schema,
      '--secret-key',
      store.secretKey,
    );
  }
  const proc: ChildProcess = spawn(process.execPath, [...NODE_FLAGS, ...args], {
    env: process.env,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve, reject) => {
    let out = '';
    proc.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('Ferry is running')) resolve();
    });
    proc.on('exit', (code) => reject(new Error(`ferry exited with ${code}`)));
  });
  const creds = JSON.parse(readFileSync(join(store.dataDir, 'credentials.json'), 'utf8')) as {
    baseUrl: string;
    token: string;
    currentSigningKey: string;
    nextSigningKey: string;
    accountId: string;
  };
  return {
    ...creds,
    cpuSeconds: () => processCpuSeconds(proc.pid),
    threadCpuSeconds: () => threadCpuSeconds(proc.pid),
    writtenBytes: () => processWriteBytes(proc.pid),
    async stop() {
      const exited = new Promise((r) => proc.on('exit', r));
      proc.kill('SIGTERM');
      await exited;
      if (!kept) await dropStore(store);
    },
  };
}

async function withSql<T>(fn: (sql: Sql) => Promise<T>): Promise<T> {
  const sql = postgres(process.env.TEST_DATABASE_URL as string, { onnotice: () => undefined });
  try {
    return await fn(sql);
  } finally {
    await sql.end();
  }
}

interface Sink {
  url: string;
  /** Resolves when the receiver has had `n` requests. */
  received(n: number): Promise<void>;
  /** Per request: ms from the timestamp in the body to its arrival. */
  delays(): Promise<number[]>;
  /** Forgets the requests received so far (the end of a warm-up). */
  reset(): void;
  stop(): Promise<void>;
}

/** The receiver, in a process of its own (see receiver.ts). */
async function startSink(): Promise<Sink> {
  const child = fork(new URL('./receiver.js', import.meta.url).pathname, [], { stdio: 'inherit' });
  const next = <T extends { type: string }>(type: T['type']): Promise<T> =>
    new Promise((resolve) => {
      const on = (message: T): void => {
        if (message.type !== type) return;
        child.off('message', on);
        resolve(message);
      };
      child.on('message', on);
    });
  const { port } = await next<{ type: 'ready'; port: number }>('ready');
  return {
    url: `http://127.0.0.1:${port}`,
    received(n) {
      const done = next('done');
      child.send({ type: 'expect', n });
      return done.then(() => undefined);
    },
    async delays() {
      const answer = next<{ type: 'delays'; delays: number[] }>('delays');
      child.send({ type: 'delays' });
      return (await answer).delays;
    },
    reset() {
      child.send({ type: 'reset' });
    },
    async stop() {
      const exited = new Promise((resolve) => child.on('exit', resolve));
      child.send({ type: 'stop' });
      await exited;
    },
  };
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number;
}

const ms = (x: number): string => `${x.toFixed(1)} ms`;

/** The middle value (the upper one of an even count); NaN for none. */
const median = (xs: number[]): number =>
  [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

/**
 * Runs `send(0)` … `send(n − 1)` from `concurrency` workers, each send after the one before it
 * on that worker; with `paceMs`, send i starts no earlier than i × paceMs after the start.
 */
async function drive(p: {
  n: number;
  concurrency: number;
  paceMs?: number;
  send: (i: number) => Promise<void>;
}): Promise<{ seconds: number; latencies: number[] }> {
  const latencies: number[] = [];
  let next = 0;
  const start = performance.now();
  const worker = async (): Promise<void> => {
    for (;;) {
      const i = next++;
      if (i >= p.n) return;
      if (p.paceMs) {
        const due = start + i * p.paceMs;
        const wait = due - performance.now();
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      }
      const t0 = performance.now();
      await p.send(i);
      latencies.push(performance.now() - t0);
    }
  };
  await Promise.all(Array.from({ length: p.concurrency }, worker));
  const seconds = (performance.now() - start) / 1000;
  latencies.sort((a, b) => a - b);
  return { seconds, latencies };
}

async function publishMany(p: {
  ferry: Running;
  destination: string;
  /** Request path; default `/v2/publish/<destination>`. */
  path?: string;
  n: number;
  concurrency: number;
  headers?: Record<string, string>;
  /** Per-message headers, added to `headers`. */
  headersOf?: (i: number) => Record<string, string>;
  body: (i: number) => string;
  paceMs?: number;
}): Promise<{ seconds: number; latencies: number[] }> {
  const pool = new Pool(p.ferry.baseUrl, { connections: p.concurrency, pipelining: 1 });
  const path = p.path ?? `/v2/publish/${p.destination}`;
  const headers = {
    authorization: `Bearer ${p.ferry.token}`,
    'content-type': 'text/plain',
    ...p.headers,
  };
  try {
    return await drive({
      n: p.n,
      concurrency: p.concurrency,
      ...(p.paceMs === undefined ? {} : { paceMs: p.paceMs }),
      send: async (i) => {
        const res = await pool.request({
          path,
          method: 'POST',
          headers: p.headersOf ? { ...headers, ...p.headersOf(i) } : headers,
          body: p.body(i),
        });
        await res.body.text();
        if (res.statusCode !== 200) throw new Error(`publish answered ${res.statusCode}`);
      },
    });
  } finally {
    await pool.close();
  }
}

async function benchPublish(
  storage: 'sqlite' | 'postgres',
  concurrency: number,
  n: number,
): Promise<Row> {
  const ferry = await startFerry(storage);
  try {
    const cpuStart = ferry.cpuSeconds();
    const { seconds, latencies } = await publishMany({
      ferry,
      destination: 'http://127.0.0.1:9/never',
      n,
      concurrency,
      headers: { 'Svc-Delay': '1d' },
      body: (i) => bodyText(`message ${i}`),
    });
    return {
      storage,
      case:
        concurrency === 1
          ? 'publish, 1 client sequential'
          : `publish, ${concurrency} concurrent clients`,
      n,
      result: `${Math.round(n / seconds).toLocaleString('en')} publishes/s`,
      detail:
        `latency p50 ${ms(percentile(latencies, 50))}, p99 ${ms(percentile(latencies, 99))}; ` +
        `Ferry's CPU ${Math.round(((ferry.cpuSeconds() - cpuStart) / n) * 1e6)} µs per publish`,
    };
  } finally {
    await ferry.stop();
  }
}

/**
 * Runs a pair of `--baseline` runs, this build's first in even repetitions and the baseline's
 * first in odd ones: two runs in a row differ here by up to a fifth, and a comparison whose every
 * pair had one build first has been seen to reverse with the order swapped (docs/benchmarks-log.md).
 */
async function inPairOrder(
  rep: number,
  ours: () => Promise<void>,
  theirs: (() => Promise<void>) | undefined,
): Promise<void> {
  if (!theirs) return ours();
  if (rep % 2 === 0) {
    await ours();
    await theirs();
  } else {
    await theirs();
    await ours();
  }
}

/**
 * `what` of this build ÷ the baseline's, pair by pair (the runs of one repetition): the median of
 * the ratios and in how many pairs it was below 1, the figure a change is judged by when single
 * runs move more than the change does.
 */
function pairRatio<T>(ours: T[], theirs: T[], value: (r: T) => number, what: string): string {
  const ratios = ours
    .map((r, i) => value(r) / value(theirs[i] as T))
    .filter((x) => Number.isFinite(x));
  if (ratios.length === 0) return `${what}: no pairs`;
  const below = ratios.filter((x) => x < 1).length;
  return `${what} ${median(ratios).toFixed(3)}× (below 1 in ${below} of ${ratios.length} pairs)`;
}

/** Prints repetition `rep`'s run (as `label`) and keeps it with the other runs of `key`. */
function keepRun<T extends Row>(
  runs: Map<string, T[]>,
  rep: number,
  key: string,
  run: T,
  label = key,
): void {
  console.error(`  rep ${rep + 1}: ${label} ${run.result} (${run.detail})`);
  runs.set(key, [...(runs.get(key) ?? []), run]);
}

/**
 * Publishes N messages and waits until the sink has them all. With `keys`, message i carries the
 * flow-control key `k<i mod keys>` with `parallelism=5` (the flow-control case).
 */
async function benchEndToEnd(
  storage: 'sqlite' | 'postgres',
  n: number,
  keys?: number,
  store?: Store,
  main?: string,
): Promise<E2eRun> {
  const sink = await startSink();
  const ferry = await startFerry(storage, [], store, main);
  try {
    if (WARM > 0 && keys === undefined) {
      const warm = sink.received(WARM);
      await publishMany({
        ferry,
        destination: `${sink.url}/warm`,
        n: WARM,
        concurrency: E2E_PUBLISHERS,
        body: (i) => bodyText(`message ${i}`),
      });
      await warm;
      sink.reset();
    }
    const all = sink.received(n);
    const start = performance.now();
    const use = machineUse(n);
    const cpuStart = ferry.cpuSeconds();
    const threadsStart = ferry.threadCpuSeconds();
    const writtenStart = ferry.writtenBytes();
    const server = serverCpuFrom(storage === 'postgres');
    const { seconds: publishSeconds } = await publishMany({
      ferry,
      destination: `${sink.url}/e2e`,
      n,
      concurrency: E2E_PUBLISHERS,
      ...(keys === undefined
        ? {}
        : {
            headersOf: (i: number) => ({
              'Svc-Flow-Control-Key': `k${i % keys}`,
              'Svc-Flow-Control-Value': 'parallelism=5',
            }),
          }),
      body: (i) => bodyText(`message ${i}`),
    });
    await all;
    const seconds = (performance.now() - start) / 1000;
    const used = use();
    const cpu = ferry.cpuSeconds() - cpuStart;
    const db = server(n);
    const mainMicros = printThreadCpu(ferry, threadsStart, n);
    return {
      storage,
      case:
        keys === undefined
          ? `end to end (publish N from ${E2E_PUBLISHERS} clients, until all received)${warmNote()}`
          : `end to end with ${keys.toLocaleString('en')} flow-control keys (parallelism 5 each)`,
      n,
      rate: n / seconds,
      cpuMicros: (cpu / n) * 1e6,
      mainMicros,
      ...db,
      result: `${Math.round(n / seconds).toLocaleString('en')} messages/s`,
      detail:
        `all received after ${seconds.toFixed(2)} s; publishing took ` +
        `${publishSeconds.toFixed(2)} s; Ferry's CPU ${Math.round((cpu / n) * 1e6)} µs per message ` +
        `(main thread ${Math.round(mainMicros)})` +
        serverNote(db.dbMicros) +
        writtenNote(storage, ferry, writtenStart, n) +
        used,
    };
  } finally {
    await ferry.stop();
    await sink.stop();
  }
}

/**
 * `; its disk writes N KB per message` since `start` (SQLite's WAL and checkpoints), or nothing on
 * PostgreSQL (the server writes, not Ferry) and where /proc/<pid>/io cannot be read.
 */
function writtenNote(
  storage: 'sqlite' | 'postgres',
  ferry: Running,
  start: number,
  n: number,
): string {
  if (storage !== 'sqlite') return '';
  const bytes = ferry.writtenBytes() - start;
  return Number.isFinite(bytes)
    ? `; its disk writes ${(bytes / n / 1024).toFixed(1)} KB per message`
    : '';
}

/**
 * Prints Ferry's CPU per message by thread since `start` (µs) on standard error, busiest first;
 * returns the main thread's.
 */
function printThreadCpu(ferry: Running, start: Map<string, number>, n: number): number {
  const threads = [...ferry.threadCpuSeconds()]
    .map(([name, s]) => [name, s - (start.get(name) ?? 0)] as const)
    .filter(([, s]) => s > 0)
    .sort((a, b) => b[1] - a[1]);
  console.error(
    `    Ferry's CPU by thread, µs per message: ` +
      threads.map(([name, s]) => `${name} ${Math.round((s / n) * 1e6)}`).join(', '),
  );
  return ((threads.find(([name]) => name === 'main')?.[1] ?? 0) / n) * 1e6;
}

async function benchLatency(
  storage: 'sqlite' | 'postgres',
  rate: number,
  seconds: number,
  store?: Store,
  main?: string,
): Promise<LatencyRun> {
  const n = rate * seconds;
  const sink = await startSink();
  const ferry = await startFerry(storage, [], store, main);
  const paced = (count: number): ReturnType<typeof publishMany> =>
    publishMany({
      ferry,
      destination: `${sink.url}/latency`,
      n: count,
      concurrency: 20,
      paceMs: 1000 / rate,
      // Wall-clock ms, comparable across processes (the receiver subtracts it from its own).
      body: () => bodyText(`${performance.timeOrigin + performance.now()}`),
    });
  const measure = async (count: number): Promise<number[]> => {
    const all = sink.received(count);
    await paced(count);
    await all;
    const delays = (await sink.delays()).sort((a, b) => a - b);
    sink.reset();
    return delays;
  };
  try {
    // The first seconds run on cold code (the JIT) and open every connection; they are measured
    // apart, so that the steady-state figure is what the rate costs, not what starting costs.
    const cold = await measure(Math.min(n, rate * WARM_UP_SECONDS));
    const cpuStart = ferry.cpuSeconds();
    const threadsStart = ferry.threadCpuSeconds();
    const writtenStart = ferry.writtenBytes();
    const server = serverCpuFrom(storage === 'postgres');
    const delays = await measure(n);
    const cpuMicros = ((ferry.cpuSeconds() - cpuStart) / n) * 1e6;
    const db = server(n);
    const mainMicros = printThreadCpu(ferry, threadsStart, n);
    return {
      storage,
      case: `publish→receive latency at ${rate} msg/s`,
      n,
      cpuMicros,
      ...db,
      p50: percentile(delays, 50),
      p99: percentile(delays, 99),
      result: `p50 ${ms(percentile(delays, 50))}, p99 ${ms(percentile(delays, 99))}`,
      detail:
        `max ${ms(delays[delays.length - 1] ?? NaN)} over ${seconds} s, after a ` +
        `${WARM_UP_SECONDS} s warm-up (warm-up p99 ${ms(percentile(cold, 99))}); Ferry's CPU ` +
        `${Math.round(cpuMicros)} µs per message, its main thread ${Math.round(mainMicros)}` +
        serverNote(db.dbMicros) +
        writtenNote(storage, ferry, writtenStart, n),
    };
  } finally {
    await ferry.stop();
    await sink.stop();
  }
}

/** A queue Ferry is compared with: BullMQ on Redis, or graphile-worker on PostgreSQL. */
interface PeerKind {
  /** The row's name, e.g. `BullMQ, Redis AOF everysec`. */
  name: string;
  /** In Ferry's ratios: `BullMQ-AOF`. */
  short: string;
  /** Whose CPU the row counts. */
  cpu: string;
  /** The Ferry rows compared with it: those of this storage only, or all. */
  storage?: 'sqlite' | 'postgres';
  start(): Promise<Peer>;
}

const bullmqPeer = (redis: Redis): PeerKind => ({
  name: 'BullMQ, Redis AOF everysec',
  short: 'BullMQ-AOF',
  cpu: 'worker + Redis',
  start: () => startPeer(redis, PEER_CONCURRENCY),
});

const graphilePeer = (databaseUrl: string): PeerKind => ({
  name: 'graphile-worker, PostgreSQL, batched',
  short: 'graphile-worker',
  // PostgreSQL's server is counted apart, as for Ferry's PostgreSQL rows (serverNote).
  cpu: 'worker process',
  storage: 'postgres',
  start: () => startGraphilePeer(databaseUrl, PEER_CONCURRENCY),
});

/** What a run measured of CPU: per message, and the PostgreSQL server's where it served (µs). */
interface CpuUse {
  cpuMicros: number;
  /** Ferry's main thread (Ferry's runs only). */
  mainMicros?: number;
  dbMicros?: number;
}

/** One end-to-end run. */
type E2eRun = Row & CpuUse & { rate: number };

/** One latency run at a steady rate. */
type LatencyRun = Row & CpuUse & { p50: number; p99: number };

/**
 * Starts counting the PostgreSQL server's CPU (postgresServerCpuSeconds) for a run that uses it;
 * the function returned gives the run's `dbMicros`, µs per message since (none otherwise).
 */
function serverCpuFrom(postgresRun: boolean): (n: number) => Pick<CpuUse, 'dbMicros'> {
  if (!postgresRun) return () => ({});
  const start = postgresServerCpuSeconds();
  return (n) => ({ dbMicros: ((postgresServerCpuSeconds() - start) / n) * 1e6 });
}

/**
 * The server's CPU in a row: BullMQ's figure counts Redis, so a PostgreSQL row shows its
 * database's beside the queue's own (the whole local server: other clients would count too).
 */
const serverNote = (micros: number | undefined): string =>
  micros === undefined || Number.isNaN(micros)
    ? ''
    : `; PostgreSQL server CPU ${Math.round(micros)} µs per message`;

/**
 * A summary row's CPU: the median of its runs' CPU per message (`who`: whose), each run's, and
 * the PostgreSQL server's median where it served.
 */
function cpuSummary(who: string, list: readonly CpuUse[]): string {
  const server =
    list[0]?.dbMicros === undefined ? undefined : median(list.map((r) => r.dbMicros ?? NaN));
  return (
    `${who} CPU ${Math.round(median(list.map((r) => r.cpuMicros)))} µs per message (median; ` +
    `runs ${list.map((r) => Math.round(r.cpuMicros)).join(', ')})` +
    serverNote(server)
  );
}

/** The end-to-end case with a peer: N jobs added from E2E_PUBLISHERS concurrent callers. */
async function benchPeerEndToEnd(kind: PeerKind, n: number): Promise<E2eRun> {
  const sink = await startSink();
  const peer = await kind.start();
  try {
    if (WARM > 0) {
      const warm = sink.received(WARM);
      await drive({
        n: WARM,
        concurrency: E2E_PUBLISHERS,
        send: (i) => peer.add(`${sink.url}/warm`, bodyText(`message ${i}`)),
      });
      await warm;
      sink.reset();
    }
    const all = sink.received(n);
    const start = performance.now();
    const use = machineUse(n);
    const cpuStart = peer.cpuSeconds();
    const server = serverCpuFrom(kind.storage === 'postgres');
    const url = `${sink.url}/e2e`;
    const { seconds: addSeconds } = await drive({
      n,
      concurrency: E2E_PUBLISHERS,
      send: (i) => peer.add(url, bodyText(`message ${i}`)),
    });
    await all;
    const seconds = (performance.now() - start) / 1000;
    const used = use();
    const cpu = peer.cpuSeconds() - cpuStart;
    const db = server(n);
    return {
      storage: kind.name,
      case: `end to end (add N from ${E2E_PUBLISHERS} callers, until all received)${warmNote()}`,
      n,
      rate: n / seconds,
      cpuMicros: (cpu / n) * 1e6,
      ...db,
      result: `${Math.round(n / seconds).toLocaleString('en')} messages/s`,
      detail:
        `all received after ${seconds.toFixed(2)} s; adding took ${addSeconds.toFixed(2)} s; ` +
        `${kind.cpu} CPU ${Math.round((cpu / n) * 1e6)} µs per message` +
        serverNote(db.dbMicros) +
        used,
    };
  } finally {
    await peer.stop();
    await sink.stop();
  }
}

/** The latency case with a peer: jobs added at a steady rate by 20 callers. */
async function benchPeerLatency(
  kind: PeerKind,
  rate: number,
  seconds: number,
): Promise<LatencyRun> {
  const n = rate * seconds;
  const sink = await startSink();
  const peer = await kind.start();
  const url = `${sink.url}/latency`;
  const measure = async (count: number): Promise<number[]> => {
    const all = sink.received(count);
    await drive({
      n: count,
      concurrency: 20,
      paceMs: 1000 / rate,
      send: () => peer.add(url, bodyText(`${performance.timeOrigin + performance.now()}`)),
    });
    await all;
    const delays = (await sink.delays()).sort((a, b) => a - b);
    sink.reset();
    return delays;
  };
  try {
    const cold = await measure(Math.min(n, rate * WARM_UP_SECONDS));
    const cpuStart = peer.cpuSeconds();
    const server = serverCpuFrom(kind.storage === 'postgres');
    const delays = await measure(n);
    const cpuMicros = ((peer.cpuSeconds() - cpuStart) / n) * 1e6;
    const db = server(n);
    return {
      storage: kind.name,
      case: `add→receive latency at ${rate} msg/s`,
      n,
      cpuMicros,
      ...db,
      p50: percentile(delays, 50),
      p99: percentile(delays, 99),
      result: `p50 ${ms(percentile(delays, 50))}, p99 ${ms(percentile(delays, 99))}`,
      detail:
        `max ${ms(delays[delays.length - 1] ?? NaN)} over ${seconds} s, after a ` +
        `${WARM_UP_SECONDS} s warm-up (warm-up p99 ${ms(percentile(cold, 99))}); ` +
        `${kind.cpu} CPU ${Math.round(cpuMicros)} µs per message` +
        serverNote(db.dbMicros),
    };
  } finally {
    await peer.stop();
    await sink.stop();
  }
}

/**
 * A store holding `count` delayed messages (due in a day) of the default account: Ferry is
 * started once on it (migrations, the account), stopped, and the messages are inserted in
 * batches through the storage layer (`messageInsertMany`), as publishes would store them.
 * Returns the store and how long seeding took.
 */
async function seededStore(
  storage: 'sqlite' | 'postgres',
  count: number,
): Promise<{ store: Store; seconds: number }> {
  const store = newStore(storage);
  try {
    return await seed(store, storage, count);
  } catch (error) {
    await dropStore(store);
    throw error;
  }
}

async function seed(
  store: Store,
  storage: 'sqlite' | 'postgres',
  count: number,
): Promise<{ store: Store; seconds: number }> {
  const first = await startFerry(storage, [], store);
  const accountId = first.accountId;
  await first.stop();
  const start = performance.now();
  const driver: Driver =
    storage === 'sqlite'
      ? openSqliteDriver({ path: join(store.dataDir, 'ferry.db') })
      : openPostgresDriver({
          url: process.env.TEST_DATABASE_URL as string,
          schema: store.schema,
        });
  try {
    // Nothing to apply (Ferry migrated the store); with PostgreSQL it also loads the array types
    // the batched insert binds with, before the first insert.
    await driver.migrate();
    const now = Date.now();
    const due = now + 86_400_000;
    const body = Buffer.from(bodyText(`message backlog`));
    const BATCH = 5_000;
    for (let done = 0; done < count; done += BATCH) {
      const messages: Message[] = [];
      for (let i = done; i < Math.min(count, done + BATCH); i += 1) {
        messages.push({
          id: newMessageId(now),
          accountId,
          url: 'http://127.0.0.1:9/backlog',
          callerIp: '127.0.0.1',
          retried: 0,
          maxRetries: 3,
          notBefore: due,
          createdAt: now,
          // Spread over a minute, as a day's delay published over a minute would be.
          dueAt: due + (i % 60_000),
          spec: { method: 'POST', headers: { 'Content-Type': ['text/plain'] } },
          body,
        });
      }
      await driver.executor.messageInsertMany({ messages });
    }
  } finally {
    await driver.close();
  }
  if (storage === 'postgres') {
    // What the server does soon after such a load (autovacuum, then a checkpoint that writes
    // the loaded pages out), done before the measurement: otherwise a checkpoint flushing the
    // seeded table runs during it, and the run measures the seeding's aftermath, not the
    // steady state of a store that holds a backlog.
    await withSql(async (sql) => {
      await sql.unsafe(`VACUUM ANALYZE ${store.schema as string}.messages`);
      await sql.unsafe('CHECKPOINT');
    });
  }
  return { store, seconds: (performance.now() - start) / 1000 };
}

/** Fan-out: every publish goes to a URL group of `endpoints` endpoints on the receiver. */
async function benchFanOut(
  storage: 'sqlite' | 'postgres',
  publishes: number,
  endpoints: number,
): Promise<Row> {
  const sink = await startSink();
  const ferry = await startFerry(storage);
  try {
    const res = await fetch(`${ferry.baseUrl}/v2/topics/fanout/endpoints`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ferry.token}` },
      body: JSON.stringify({
        endpoints: Array.from({ length: endpoints }, (_, i) => ({ url: `${sink.url}/e${i}` })),
      }),
    });
    if (res.status !== 200) throw new Error(`creating the group answered ${res.status}`);
    const n = publishes * endpoints;
    const all = sink.received(n);
    const start = performance.now();
    const { seconds: publishSeconds, latencies } = await publishMany({
      ferry,
      destination: 'fanout',
      n: publishes,
      concurrency: 10,
      body: (i) => bodyText(`message ${i}`),
    });
    await all;
    const seconds = (performance.now() - start) / 1000;
    return {
      storage,
      case: `fan-out: publish to a ${endpoints}-endpoint URL group (10 clients), until all received`,
      n,
      result: `${Math.round(n / seconds).toLocaleString('en')} deliveries/s`,
      detail:
        `${publishes} publishes in ${publishSeconds.toFixed(2)} s ` +
        `(${Math.round((publishes * endpoints) / publishSeconds).toLocaleString('en')} messages stored/s, ` +
        `publish p50 ${ms(percentile(latencies, 50))}, p99 ${ms(percentile(latencies, 99))}); ` +
        `all received after ${seconds.toFixed(2)} s`,
    };
  } finally {
    await ferry.stop();
    await sink.stop();
  }
}

/** Batch publish: `batches` requests of `size` delayed messages each (no delivery competes). */
async function benchBatch(
  storage: 'sqlite' | 'postgres',
  batches: number,
  size: number,
): Promise<Row> {
  const ferry = await startFerry(storage);
  try {
    const entries = (b: number) =>
      JSON.stringify(
        Array.from({ length: size }, (_, i) => ({
          destination: 'http://127.0.0.1:9/never',
          headers: { 'Svc-Delay': '1d' },
          body: bodyText(`message ${b}.${i}`),
        })),
      );
    const { seconds, latencies } = await publishMany({
      ferry,
      destination: '',
      path: '/v2/batch',
      n: batches,
      concurrency: 10,
      headers: { 'content-type': 'application/json' },
      body: entries,
    });
    const n = batches * size;
    return {
      storage,
      case: `batch publish, ${size} messages per request (10 clients)`,
      n,
      result: `${Math.round(n / seconds).toLocaleString('en')} messages/s`,
      detail: `${Math.round(batches / seconds).toLocaleString('en')} batches/s; batch latency p50 ${ms(percentile(latencies, 50))}, p99 ${ms(percentile(latencies, 99))}`,
    };
  } finally {
    await ferry.stop();
  }
}

/** Time left before a tick for creating the schedules; else the bench waits for the next minute. */
const SCHEDULE_SETUP_MS = 20_000;

async function benchSchedules(storage: 'sqlite' | 'postgres', n: number): Promise<Row> {
  const sink = await startSink();
  const ferry = await startFerry(storage);
  try {
    // The first minute boundary far enough ahead to create every schedule before it.
    const tick = Math.ceil((Date.now() + SCHEDULE_SETUP_MS) / 60_000) * 60_000;
    const pool = new Pool(ferry.baseUrl, { connections: 20, pipelining: 1 });
    // Due at that minute only (UTC, once a day): an every-minute schedule created in the minute
    // before it would also fire at the boundary in between, before the tick being measured.
    const at = new Date(tick);
    const headers = {
      authorization: `Bearer ${ferry.token}`,
      'content-type': 'text/plain',
      'Svc-Cron': `${at.getUTCMinutes()} ${at.getUTCHours()} * * *`,
    };
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < n) {
        next++;
        const res = await pool.request({
          path: `/v2/schedules/${sink.url}/schedule`,
          method: 'POST',
          headers,
          // The receiver measures from the number that begins the body: the tick.
          body: bodyText(`${tick}`),
        });
        await res.body.text();
        if (res.statusCode !== 200) throw new Error(`schedule create answered ${res.statusCode}`);
      }
    };
    await Promise.all(Array.from({ length: 20 }, worker));
    await pool.close();
    if (Date.now() >= tick) throw new Error('creating the schedules took past the tick');
    const waitedSec = (tick - Date.now()) / 1000;
    await sink.received(n);
    const delays = (await sink.delays()).slice(0, n).sort((a, b) => a - b);
    return {
      storage,
      case: `schedule lateness (${n.toLocaleString('en')} schedules due on the same minute)`,
      n,
      result: `tick→receive p50 ${ms(percentile(delays, 50))}, p99 ${ms(percentile(delays, 99))}`,
      detail: `max ${ms(delays[delays.length - 1] ?? NaN)}; waited ${waitedSec.toFixed(0)} s for the tick`,
    };
  } finally {
    await ferry.stop();
    await sink.stop();
  }
}

/**
 * Workflow runs of 5 steps (`context.run`), official SDK against Ferry in Upstash mode: runs
 * completed per second with `concurrency` runs started at a time, and, from runs one at a time,
 * the time per step (run duration ÷ steps: one round trip through Ferry and the SDK each).
 */
async function benchWorkflows(storage: 'sqlite' | 'postgres', runs: number): Promise<Row[]> {
  const ferry = await startFerry(storage, ['--header-prefix', 'Upstash']);
  const endpoint = await startWorkflowEndpoint(ferry);
  try {
    const sequential = Math.max(5, Math.round(runs / 20));
    for (let i = 0; i < sequential; i++) {
      await triggerRuns(ferry, endpoint.url, 1, 1);
      await endpoint.finished(i + 1);
    }
    const perStep = endpoint.durations
      .slice(0, sequential)
      .map((d) => d / WORKFLOW_STEPS)
      .sort((a, b) => a - b);
    const start = performance.now();
    const all = endpoint.finished(sequential + runs);
    await triggerRuns(ferry, endpoint.url, runs, 20);
    await all;
    const seconds = (performance.now() - start) / 1000;
    await endpoint.idle();
    const durations = endpoint.durations.slice(sequential).sort((a, b) => a - b);
    return [
      {
        storage,
        case: `workflow runs of ${WORKFLOW_STEPS} steps, 20 started at a time (official SDK)`,
        n: runs,
        result: `${(runs / seconds).toFixed(1)} runs/s`,
        detail: `${Math.round((runs * WORKFLOW_STEPS) / seconds).toLocaleString('en')} steps/s; run duration p50 ${ms(percentile(durations, 50))}, p99 ${ms(percentile(durations, 99))}`,
      },
      {
        storage,
        case: `workflow step overhead (runs of ${WORKFLOW_STEPS} steps one at a time)`,
        n: sequential,
        result: `${ms(percentile(perStep, 50))} per step (p50)`,
        detail: `p99 ${ms(percentile(perStep, 99))}; a step is one delivery to the endpoint and the SDK's publish of the next`,
      },
    ];
  } finally {
    await endpoint.close();
    await ferry.stop();
  }
}

/**
 * The machine's own pace, without Ferry: a bare loop POSTing the same bodies to the same receiver
 * over 50 keep-alive connections. This shared VM's speed drifts from hour to hour, so each run
 * records it next to Ferry's figures.
 */
async function benchReference(n: number): Promise<Row> {
  const sink = await startSink();
  const pool = new Pool(sink.url, { connections: 50, pipelining: 1 });
  try {
    let next = 0;
    const all = sink.received(n);
    const start = performance.now();
    const worker = async (): Promise<void> => {
      while (next < n) {
        next += 1;
        const res = await pool.request({ path: '/bare', method: 'POST', body: 'x'.repeat(110) });
        await res.body.text();
      }
    };
    await Promise.all(Array.from({ length: 50 }, worker));
    await all;
    const seconds = (performance.now() - start) / 1000;
    return {
      storage: '—',
      case: 'reference: a bare loop POSTing to the receiver, no Ferry (50 connections)',
      n,
      result: `${Math.round(n / seconds).toLocaleString('en')} requests/s`,
      detail: "the machine's pace at the time of this run",
    };
  } finally {
    await pool.close();
    await sink.stop();
  }
}

/**
 * The storage case: REPS runs of STORAGE_N messages per storage, alternating with the
 * `--baseline` build's storage modules when given; medians per step.
 */
async function benchStorage(
  picked: ('sqlite' | 'postgres')[],
  median: (xs: number[]) => number,
  push: (r: Row, before: ReturnType<typeof cpuTicks>) => void,
): Promise<void> {
  const n = quick ? 20_000 : 80_000;
  const builds: [string, Awaited<ReturnType<typeof loadBuild>>][] = [
    ['', await loadBuild(new URL('..', import.meta.url).pathname)],
  ];
  if (args.baseline !== undefined) {
    builds.push([' (baseline)', await loadBuild(join(args.baseline, 'dist'))]);
  }
  // With --body, a buffer of its own per message (see runStorage).
  const body =
    BODY_BYTES === undefined ? undefined : (i: number) => Buffer.from(bodyText(`message ${i}`));
  for (const storage of picked) {
    // Unmeasured first: each build's code is compiled in this process on its first run.
    for (const [, build] of builds) await runStorage(build, storage, n / 4, withSql, body);
    const before = cpuTicks();
    const runs = new Map<string, StorageRun[]>(builds.map(([label]) => [label, []]));
    for (let rep = 0; rep < REPS; rep += 1) {
      // Either build first in half of the repetitions (see inPairOrder).
      for (const [label, build] of rep % 2 === 0 ? builds : [...builds].reverse()) {
        const run = await runStorage(build, storage, n, withSql, body);
        console.error(`  rep ${rep + 1}: ${storage}${label} ${describeStorageRun(run)}`);
        runs.get(label)?.push(run);
      }
    }
    for (const [label] of builds) {
      const all = runs.get(label) ?? [];
      const pick = (key: keyof StorageRun): number =>
        median(all.map((r) => r[key] ?? NaN).filter((x) => !Number.isNaN(x)));
      const summary: StorageRun = {
        publish: pick('publish'),
        claim: pick('claim'),
        finish: pick('finish'),
        total: pick('total'),
        ...(storage === 'postgres' ? { server: pick('server') } : {}),
        ...(all.some((r) => r.serverPublish !== undefined)
          ? {
              serverPublish: pick('serverPublish'),
              serverClaim: pick('serverClaim'),
              serverFinish: pick('serverFinish'),
            }
          : {}),
      };
      push(
        {
          storage: `${storage}${label}`,
          case: `storage work of a delivered message (publish 50 with their CREATED events, claim, finish), CPU per message, median of ${REPS} runs`,
          n,
          result: `${summary.total.toFixed(1)} µs per message`,
          detail: `${describeStorageRun(summary)}; runs ${all.map((r) => r.total.toFixed(1)).join(', ')}`,
        },
        before,
      );
    }
  }
}

async function main(): Promise<void> {
  const storages: ('sqlite' | 'postgres')[] = ['sqlite'];
  if (process.env.TEST_DATABASE_URL) storages.push('postgres');
  else console.error('TEST_DATABASE_URL is not set: PostgreSQL cases skipped');
  const rows: Row[] = [];
  const scale = quick ? 0.2 : 1;
  if (wanted('reference')) {
    const before = cpuTicks();
    const row = await benchReference(Math.round(40_000 * scale));
    row.detail += `; steal ${stealShare(before, cpuTicks())}`;
    console.error(`reference: ${row.result}`);
    rows.push(row);
  }
  const picked = storages.filter((s) => !only || s === only);
  const e2eN = Math.round(20_000 * scale);
  const latencySeconds = quick ? 4 : 10;
  const push = (r: Row, before: ReturnType<typeof cpuTicks>): void => {
    r.detail += `; steal ${stealShare(before, cpuTicks())}`;
    console.error(`${r.storage} | ${r.case}: ${r.result} (${r.detail})`);
    rows.push(r);
  };
  // End to end and latency: Ferry on each storage and the peers (BullMQ; graphile-worker when
  // PostgreSQL runs) in turn, REPS times, so a change of the machine's pace hits all of them;
  // medians and their ratios. BullMQ's is every Ferry row's; graphile-worker's the PostgreSQL
  // rows' too.
  const peerWanted = (wanted('e2e') || wanted('latency')) && onlyCase !== 'backlog' && !NO_PEER;
  let redis: Redis | undefined;
  const peers: PeerKind[] = [];
  if (peerWanted) {
    if (redisAvailable()) redis = await startRedis();
    else console.error('redis-server is not installed: the BullMQ peer rows are skipped');
    if (redis) peers.push(bullmqPeer(redis));
    if (picked.includes('postgres')) {
      peers.push(graphilePeer(process.env.TEST_DATABASE_URL as string));
    }
  }
  /** The peers a Ferry row is compared with: BullMQ, and graphile-worker for PostgreSQL. */
  const comparedWith = (key: string): PeerKind[] =>
    peers.filter((p) => p.storage === undefined || key.startsWith(p.storage));
  try {
    if (wanted('e2e') && onlyCase !== 'backlog') {
      const runs = new Map<string, E2eRun[]>();
      const before = cpuTicks();
      for (let rep = 0; rep < REPS; rep += 1) {
        for (const storage of picked) {
          await inPairOrder(
            rep,
            async () => {
              const r = await benchEndToEnd(storage, e2eN);
              keepRun(runs, rep, storage, r);
            },
            BASELINE_MAIN === undefined
              ? undefined
              : async () => {
                  const b = await benchEndToEnd(storage, e2eN, undefined, undefined, BASELINE_MAIN);
                  b.storage = `${storage} (baseline)`;
                  keepRun(runs, rep, b.storage, b);
                },
          );
        }
        for (const peer of peers) {
          const r = await benchPeerEndToEnd(peer, e2eN);
          keepRun(runs, rep, peer.name, r, peer.short);
        }
      }
      const isPeer = (key: string): PeerKind | undefined => peers.find((p) => p.name === key);
      for (const [key, list] of runs) {
        const rate = median(list.map((r) => r.rate));
        const first = list[0] as Row;
        const ratio = isPeer(key)
          ? ''
          : comparedWith(key)
              .map((p) => {
                const peerRate = median((runs.get(p.name) ?? []).map((r) => r.rate));
                return `; ${(rate / peerRate).toFixed(2)}× ${p.short}`;
              })
              .join('');
        push(
          {
            storage: first.storage,
            case: `${first.case}, median of ${list.length} interleaved runs`,
            n: e2eN,
            result: `${Math.round(rate).toLocaleString('en')} messages/s${ratio}`,
            detail:
              `runs ${list.map((r) => Math.round(r.rate)).join(', ')}; ` +
              cpuSummary(isPeer(key)?.cpu ?? "Ferry's", list),
          },
          before,
        );
      }
      for (const storage of BASELINE_MAIN ? picked : []) {
        const ours = runs.get(storage) ?? [];
        const theirs = runs.get(`${storage} (baseline)`) ?? [];
        push(
          {
            storage: `${storage} (this ÷ baseline)`,
            case: `end to end, each of ${ours.length} pairs of runs (either build first in half of them)`,
            n: e2eN,
            result: pairRatio(ours, theirs, (r) => r.mainMicros ?? NaN, 'main thread'),
            detail:
              `${pairRatio(ours, theirs, (r) => r.cpuMicros, "Ferry's CPU")}; ` +
              pairRatio(ours, theirs, (r) => r.rate, 'rate'),
          },
          before,
        );
      }
    }
    if (wanted('latency') && onlyCase !== 'backlog') {
      const runs = new Map<string, LatencyRun[]>();
      const before = cpuTicks();
      for (let rep = 0; rep < REPS; rep += 1) {
        for (const storage of picked) {
          await inPairOrder(
            rep,
            async () => {
              const r = await benchLatency(storage, 500, latencySeconds);
              keepRun(runs, rep, storage, r);
            },
            BASELINE_MAIN === undefined
              ? undefined
              : async () => {
                  const b = await benchLatency(
                    storage,
                    500,
                    latencySeconds,
                    undefined,
                    BASELINE_MAIN,
                  );
                  b.storage = `${storage} (baseline)`;
                  keepRun(runs, rep, b.storage, b);
                },
          );
        }
        for (const peer of peers) {
          const r = await benchPeerLatency(peer, 500, latencySeconds);
          keepRun(runs, rep, peer.name, r, peer.short);
        }
      }
      const isPeer = (key: string): PeerKind | undefined => peers.find((p) => p.name === key);
      for (const [key, list] of runs) {
        const p50 = median(list.map((r) => r.p50));
        const p99 = median(list.map((r) => r.p99));
        const first = list[0] as Row;
        const ratio = isPeer(key)
          ? ''
          : comparedWith(key)
              .map((p) => {
                const peer = runs.get(p.name) ?? [];
                return (
                  `; ${(p50 / median(peer.map((r) => r.p50))).toFixed(2)}× / ` +
                  `${(p99 / median(peer.map((r) => r.p99))).toFixed(2)}× ${p.short}'s`
                );
              })
              .join('');
        push(
          {
            storage: first.storage,
            case: `${first.case}, median of ${list.length} interleaved runs`,
            n: first.n,
            result: `p50 ${ms(p50)}, p99 ${ms(p99)}${ratio}`,
            detail:
              `runs (p50/p99) ${list.map((r) => `${r.p50.toFixed(1)}/${r.p99.toFixed(1)}`).join(', ')}; ` +
              cpuSummary(isPeer(key)?.cpu ?? "Ferry's", list),
          },
          before,
        );
      }
    }
  } finally {
    await redis?.stop();
  }
  if (wanted('backlog')) {
    // Per storage: an empty store and one holding BACKLOG delayed messages, each kept across
    // its Ferry restarts; the end-to-end and latency cases alternate between them REPS times.
    for (const storage of picked) {
      const empty = newStore(storage);
      const { store: full, seconds: seedSeconds } = await seededStore(storage, BACKLOG);
      console.error(
        `${storage}: seeded ${BACKLOG.toLocaleString('en')} in ${seedSeconds.toFixed(1)} s`,
      );
      try {
        const before = cpuTicks();
        const rate = { empty: [] as number[], full: [] as number[] };
        const p99 = { empty: [] as number[], full: [] as number[] };
        for (let rep = 0; rep < REPS; rep += 1) {
          for (const [kind, store] of [
            ['empty', empty],
            ['full', full],
          ] as const) {
            const e = await benchEndToEnd(storage, e2eN, undefined, store);
            const l = await benchLatency(storage, 500, latencySeconds, store);
            console.error(`  rep ${rep + 1}: ${storage} ${kind}: ${e.result}; ${l.result}`);
            rate[kind].push(e.rate);
            p99[kind].push(l.p99);
          }
        }
        push(
          {
            storage,
            case: `backlog: ${BACKLOG.toLocaleString('en')} delayed messages (due in a day) vs an empty store, median of ${REPS} interleaved runs`,
            n: e2eN,
            result:
              `end to end ${(median(rate.full) / median(rate.empty)).toFixed(2)}×, ` +
              `p99 at 500 msg/s ${(median(p99.full) / median(p99.empty)).toFixed(2)}×`,
            detail:
              `end to end ${Math.round(median(rate.full))} vs ${Math.round(median(rate.empty))} messages/s ` +
              `(runs ${rate.full.map(Math.round).join(', ')} vs ${rate.empty.map(Math.round).join(', ')}); ` +
              `p99 ${ms(median(p99.full))} vs ${ms(median(p99.empty))}; seeded in ${seedSeconds.toFixed(0)} s`,
          },
          before,
        );
      } finally {
        await dropStore(empty);
        await dropStore(full);
      }
    }
  }
  if (wanted('storage')) await benchStorage(picked, median, push);
  for (const storage of picked) {
    const run = async (row: Promise<Row>): Promise<void> => {
      const before = cpuTicks();
      const r = await row;
      // A row summing earlier runs (the flow case) brings its own.
      if (!r.detail.includes('; steal ')) r.detail += `; steal ${stealShare(before, cpuTicks())}`;
      console.error(`${r.storage} | ${r.case}: ${r.result} (${r.detail})`);
      rows.push(r);
    };
    if (wanted('publish')) {
      await run(benchPublish(storage, 1, Math.round(2_000 * scale)));
      await run(benchPublish(storage, 50, Math.round(20_000 * scale)));
    }
    if (wanted('flow')) {
      // Interleaved runs of each (no keys, 1,000 keys), so a load change on the shared machine
      // hits both; the cost is 1 − (keyed median ÷ unkeyed median).
      const plain: number[] = [];
      const keyed: number[] = [];
      const flowStart = cpuTicks();
      let last: (Row & { rate: number }) | undefined;
      for (let round = 0; round < FLOW_ROUNDS; round += 1) {
        plain.push((await benchEndToEnd(storage, Math.round(20_000 * scale))).rate);
        last = await benchEndToEnd(storage, Math.round(20_000 * scale), 1_000);
        keyed.push(last.rate);
      }
      const cost = 1 - median(keyed) / median(plain);
      await run(
        Promise.resolve({
          storage,
          case: `flow control: ${last?.case ?? ''} vs none (median of ${FLOW_ROUNDS} interleaved runs)`,
          n: Math.round(20_000 * scale),
          result: `${Math.round(median(keyed)).toLocaleString('en')} vs ${Math.round(median(plain)).toLocaleString('en')} messages/s`,
          detail: `cost ${(cost * 100).toFixed(1)} % (runs keyed ${keyed.map(Math.round).join(', ')}; none ${plain.map(Math.round).join(', ')}); steal ${stealShare(flowStart, cpuTicks())}`,
        }),
      );
    }
    if (wanted('fanout')) await run(benchFanOut(storage, Math.round(200 * scale), 100));
    if (wanted('batch')) await run(benchBatch(storage, Math.round(200 * scale), 100));
    if (wanted('workflow')) {
      for (const row of await benchWorkflows(storage, Math.round(200 * scale))) {
        console.error(`${row.storage} | ${row.case}: ${row.result} (${row.detail})`);
        rows.push(row);
      }
    }
    // 1,000 is the paid plan's max_schedules, which `ferry start` gives the default account.
    if (wanted('schedule')) await run(benchSchedules(storage, quick ? 200 : 1_000));
  }
  const cpu = cpus()[0]?.model ?? 'unknown CPU';
  console.log(
    `\n## Results (${new Date().toISOString().slice(0, 10)}, ${cpus().length} × ${cpu}, Node ${process.version})\n`,
  );
  console.log('| storage | case | N | result | detail |');
  console.log('|---|---|---|---|---|');
  for (const r of rows)
    console.log(
      `| ${r.storage} | ${r.case} | ${r.n.toLocaleString('en')} | ${r.result} | ${r.detail} |`,
    );
  console.log(
    '\nMethod: Ferry runs as a child process (`ferry start`, default settings but ' +
      'max_requests_per_second lifted, SQLite with ' +
      'synchronous=FULL, a fresh data directory per case); the load generator (undici pool, ' +
      'keep-alive) runs in the benchmark process and the receiver (node:http, answers 200 at ' +
      'once) in a process of its own, all on 127.0.0.1. ' +
      (BODY_BYTES === undefined
        ? 'Bodies are ~110 bytes. '
        : `Bodies are ${BODY_BYTES} bytes (--body). `) +
      'Publish cases use ' +
      '`Svc-Delay: 1d` so no delivery runs meanwhile. The end-to-end case publishes from ' +
      `${E2E_PUBLISHERS} concurrent clients so that publishing does not cap the delivery rate. ` +
      `The peers' workers run ${PEER_CONCURRENCY} jobs at a time: what Ferry has in flight to one ` +
      'destination origin with the settings its processes get here. ' +
      'The latency case paces publishes at a steady rate over a 20-connection pool; latency is ' +
      'measured at the receiver from a timestamp written into the body just before the publish ' +
      'request, so it includes any wait of the publish itself. The fan-out case publishes to a ' +
      'URL group of 100 endpoints (all on the receiver) from 10 concurrent clients and is timed ' +
      'until every endpoint has every message. The batch case sends `POST /v2/batch` requests of ' +
      '100 delayed messages each from 10 concurrent clients. The schedule case creates the ' +
      'schedules (due at one coming minute, 20 connections) before a minute boundary and measures, at the ' +
      'receiver, the delay from that tick to each delivery. The reference row is a bare loop ' +
      'POSTing the same bodies to the same receiver over 50 connections, without Ferry: this ' +
      "shared machine's speed drifts by a third from hour to hour, so compare runs by it. " +
      "'steal' is the share of the machine's CPU time its hypervisor gave to other guests " +
      'during the case (/proc/stat); above a few per cent the figures are not comparable.',
  );
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
