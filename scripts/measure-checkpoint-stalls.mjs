#!/usr/bin/env node
/**
 * What SQLite's WAL checkpoints cost Ferry's main thread (issue 16), build against build.
 *
 * For each build directory given (a checkout with `npm run build` done), in turn, `--reps` times
 * (interleaved, so that the machine's load falls on both alike): a child process opens that
 * build's SQLite driver on a fresh file (default settings: synchronous=FULL through the WAL
 * fsync), then commits `--tx` transactions of `--rows` rows of about 300 bytes one after
 * another, each awaited (its fsync included), as the publish path's group commits are. A 1 ms
 * timer meanwhile records how long the event loop was held between two of its runs (wall time:
 * on a loaded machine it includes waits for a CPU, so compare builds only within one run).
 *
 *     node scripts/measure-checkpoint-stalls.mjs [--reps 3] [--tx 2000] [--rows 50] DIR...
 *
 * Prints one line per run and a median per build: transaction time (p50/p99), event-loop gaps
 * (p99, max), and how many gaps reached 10 ms.
 */
import { fork } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    reps: { type: 'string', default: '3' },
    tx: { type: 'string', default: '2000' },
    rows: { type: 'string', default: '50' },
    child: { type: 'string' },
  },
});

const percentile = (sorted, p) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];

if (values.child) {
  // One run, in a process of its own: the build's driver, a fresh file.
  const { openSqliteDriver } = await import(
    join(values.child, 'dist/storage/sqlite/sqlite-driver.js')
  );
  const dir = mkdtempSync(join(tmpdir(), 'ferry-stalls-'));
  const driver = openSqliteDriver({ path: join(dir, 'ferry.db') });
  await driver.migrate();
  const gaps = [];
  let last = performance.now();
  const timer = setInterval(() => {
    const now = performance.now();
    gaps.push(now - last);
    last = now;
  }, 1);
  const txMs = [];
  let n = 0;
  const row = () => ({
    id: `acct_${process.pid}_${n++}`,
    plan: 'free',
    passwordHash: 'a'.repeat(300),
    currentSigningKey: 'sig_current',
    nextSigningKey: 'sig_next',
    createdAt: 0,
  });
  const started = performance.now();
  for (let i = 0; i < Number(values.tx); i++) {
    const t0 = performance.now();
    await driver.executor.transaction(async (tx) => {
      for (let j = 0; j < Number(values.rows); j++) await tx.accountInsert({ account: row() });
    });
    txMs.push(performance.now() - t0);
  }
  const totalS = (performance.now() - started) / 1000;
  clearInterval(timer);
  await driver.close();
  rmSync(dir, { recursive: true, force: true });
  txMs.sort((a, b) => a - b);
  gaps.sort((a, b) => a - b);
  process.send({
    txP50: percentile(txMs, 0.5),
    txP99: percentile(txMs, 0.99),
    gapP99: percentile(gaps, 0.99),
    gapMax: gaps[gaps.length - 1],
    gapsOver10: gaps.filter((g) => g >= 10).length,
    totalS,
  });
  process.exit(0);
}

const builds = positionals.map((dir) => resolve(dir));
if (builds.length === 0) throw new Error('name at least one build directory');
const results = new Map(builds.map((b) => [b, []]));
const fmt = (r) =>
  `tx p50 ${r.txP50.toFixed(2)} ms, p99 ${r.txP99.toFixed(2)} ms; loop gaps p99 ${r.gapP99.toFixed(1)} ms, ` +
  `max ${r.gapMax.toFixed(1)} ms, ${r.gapsOver10} ≥ 10 ms; ${r.totalS.toFixed(1)} s`;
for (let rep = 1; rep <= Number(values.reps); rep++) {
  for (const build of builds) {
    const child = fork(new URL(import.meta.url).pathname, [
      '--child',
      build,
      '--tx',
      values.tx,
      '--rows',
      values.rows,
    ]);
    const result = await new Promise((done, fail) => {
      child.once('message', done);
      child.once('exit', (code) => fail(new Error(`run exited with code ${code}`)));
    });
    results.get(build).push(result);
    console.log(`rep ${rep}: ${build}: ${fmt(result)}`);
  }
}
for (const build of builds) {
  const runs = results.get(build);
  const median = (key) =>
    runs.map((r) => r[key]).sort((a, b) => a - b)[Math.floor(runs.length / 2)];
  const keys = ['txP50', 'txP99', 'gapP99', 'gapMax', 'gapsOver10', 'totalS'];
  console.log(`median ${build}: ${fmt(Object.fromEntries(keys.map((k) => [k, median(k)])))}`);
}
