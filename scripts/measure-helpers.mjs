/**
 * What scripts/measure-lists.mjs and scripts/measure-fanout.mjs share: starting and stopping the
 * measured server, a /health poller that runs on a thread of its own, the server's event-loop
 * delay from its /metrics, its longest synchronous stretch and CPU time.
 *
 * The poller has its own thread because the measuring script's main thread has work of its own
 * (parsing 4 MiB list pages): polled from there, a /health answer waits for that work too, and
 * the figure would blame the server for the script's own pauses.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';

/** Milliseconds on a clock that the main thread and the poller's thread share. */
export const nowMs = () => performance.timeOrigin + performance.now();

/**
 * Starts polling `${base}/health` every `intervalMs` on a worker thread; `stop()` resolves with
 * every answer: `{at, ms}`, when it was asked ({@link nowMs}) and how long it took.
 */
export function startHealthPoller(base, intervalMs) {
  const worker = new Worker(new URL(import.meta.url), { workerData: { base, intervalMs } });
  const done = new Promise((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  return {
    async stop() {
      worker.postMessage('stop');
      const samples = await done;
      await worker.terminate();
      return samples;
    },
  };
}

/** p50, p99 and max of the samples' latencies, ms. */
export function summary(samples) {
  const sorted = samples.map((s) => s.ms).sort((a, b) => a - b);
  const at = (q) => Math.round(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]);
  return { samples: sorted.length, p50Ms: at(0.5), p99Ms: at(0.99), maxMs: at(1) };
}

/**
 * The server's longest event-loop delay since the last call, ms: prom-client's
 * `nodejs_eventloop_lag_max_seconds` (sampled every 10 ms), which it resets at every scrape.
 */
export async function eventLoopLagMaxMs(base) {
  const text = await (await fetch(`${base}/metrics`)).text();
  const max = /^nodejs_eventloop_lag_max_seconds (\S+)$/m.exec(text)?.[1];
  return Math.round(Number(max) * 1000);
}

/**
 * Starts `ferry start` from dist/ on `dir` and `port` (paid plan, plus `args`), with
 * scripts/stall-monitor.mjs loaded (its records go to `dir`), and with `--cpu-prof` into
 * `profileDir` when given.
 */
export function startServer({ dir, port, profileDir, args = [] }) {
  return spawn(
    process.execPath,
    [
      '--import',
      new URL('./stall-monitor.mjs', import.meta.url).href,
      ...(profileDir ? ['--cpu-prof', '--cpu-prof-dir', profileDir] : []),
      'dist/cli/main.js',
      'start',
      '--data-dir',
      dir,
      '--port',
      port,
      '--plan',
      'paid',
      ...args,
    ],
    {
      stdio: ['ignore', 'ignore', 'inherit'],
      env: { ...process.env, FERRY_STALL_FILE: join(dir, STALL_FILE) },
    },
  );
}

const STALL_FILE = 'stalls.json';

/** Stops a server started by {@link startServer} (SIGTERM) and waits for its exit. */
export async function stopServer(child) {
  if (child.exitCode !== null) return;
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
}

/** Waits until `${base}/health` answers 200. */
export async function waitHealthy(base) {
  for (let i = 0; i < 200; i++) {
    try {
      if ((await fetch(`${base}/health`)).ok) return;
    } catch {
      // Not listening yet.
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('server did not start');
}

/**
 * The longest synchronous stretch of the server started on `dir` (scripts/stall-monitor.mjs)
 * that began within [from, to), ms of CPU time, with the wall time it took; read after the
 * server exited.
 */
export function longestStretch(dir, from, to) {
  let records = [];
  try {
    records = JSON.parse(readFileSync(join(dir, STALL_FILE), 'utf8'));
  } catch {
    return undefined;
  }
  const inside = records.filter((r) => r.at >= from && r.at < to);
  const longest = inside.reduce((a, r) => (r.cpuMs > (a?.cpuMs ?? -1) ? r : a), undefined);
  const round = (x) => Math.round(x * 10) / 10;
  return longest
    ? { cpuMs: round(longest.cpuMs), wallMs: round(longest.wallMs) }
    : { cpuMs: 0, wallMs: 0 };
}

/** CPU time the process `pid` has used so far (user and system, all threads), ms. */
export function cpuMsOf(pid) {
  // Fields 14 and 15 of /proc/<pid>/stat, in clock ticks of 10 ms; the name (field 2) may hold
  // spaces, so count from the parenthesis that ends it.
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** Waits for a fresh server's credentials.json (written a moment after /health answers). */
export async function waitForCredentials(dir) {
  for (let i = 0; !existsSync(join(dir, 'credentials.json')); i++) {
    if (i > 100) throw new Error('no credentials.json');
    await new Promise((r) => setTimeout(r, 100));
  }
}

if (!isMainThread && workerData?.base) {
  const { base, intervalMs } = workerData;
  const samples = [];
  let polling = true;
  parentPort.once('message', () => (polling = false));
  while (polling) {
    const at = nowMs();
    try {
      await (await fetch(`${base}/health`)).text();
    } catch {
      // A refused connection is a failed sample, counted as the time it took.
    }
    samples.push({ at, ms: nowMs() - at });
    await new Promise((r) => setTimeout(r, intervalMs));
  }
  parentPort.postMessage(samples);
}

/**
 * Starts a Ferry in this process (the build in `root`/dist) with a fresh account of the paid
 * plan; `driver` replaces the storage the config names. Resolves with the Ferry and the token.
 */
export async function startFerryInProcess({ root, dataDir, args = [], driver }) {
  const { createFerry } = await import(`${root}/dist/app.js`);
  const { loadConfig } = await import(`${root}/dist/cli/config.js`);
  const { createAccount } = await import(`${root}/dist/cli/credentials.js`);
  const { silentLogger } = await import(`${root}/dist/core/logger.js`);
  const config = loadConfig(
    ['--port', '0', '--data-dir', dataDir, '--log-level', 'silent', ...args],
    {},
  );
  const ferry = await createFerry({ config, logger: silentLogger, driver });
  await ferry.start();
  const { token } = await createAccount({
    executor: ferry.driver.executor,
    plan: 'paid',
    now: Date.now(),
    secrets: ferry.secrets,
  });
  return { ferry, token };
}
