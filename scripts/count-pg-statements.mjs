#!/usr/bin/env node
/**
 * Counts the statements a Ferry on PostgreSQL sends per delivered message (docs/benchmarks.md,
 * "a plain publish is one statement"). Starts Ferry in this process on a fresh schema of
 * TEST_DATABASE_URL with the driver's `trace` option, a receiver on 127.0.0.1, delivers 500
 * messages unmeasured, then N measured ones, and prints the statements by their first words,
 * with the count per message. `--rate` paces the publishes (one every 1000/rate ms, the latency
 * case's way); without it 200 concurrent publishers send as fast as they can (the end-to-end
 * case's way). `--root DIR` measures another build (its `dist/`). It also prints this process's
 * garbage collections over the measured messages (Ferry's main thread, the publisher and the
 * receiver: the delivery thread's are its own): how often a build's allocation fills the young
 * generation, and what the collections paused.
 *
 *     npm run build && node scripts/count-pg-statements.mjs --rate 500 --messages 3000
 */
import http from 'node:http';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { PerformanceObserver, constants } from 'node:perf_hooks';
import postgres from 'postgres';
import { startFerryInProcess } from './measure-helpers.mjs';

const { values } = parseArgs({
  options: {
    rate: { type: 'string' },
    messages: { type: 'string', default: '3000' },
    root: { type: 'string', default: '.' },
  },
});
const url = process.env.TEST_DATABASE_URL;
if (!url) {
  console.error('count-pg-statements: set TEST_DATABASE_URL');
  process.exit(2);
}
const root = resolve(values.root);
const n = Number(values.messages);
const rate = values.rate === undefined ? undefined : Number(values.rate);

const { openPostgresDriver } = await import(`${root}/dist/storage/postgres/postgres-driver.js`);

const counts = new Map();
let measuring = false;
const schema = `ferry_count_${randomBytes(4).toString('hex')}`;
const driver = openPostgresDriver({
  url,
  schema,
  trace: (text) => {
    if (!measuring) return;
    const key = text.replace(/\s+/g, ' ').trim().slice(0, 80);
    counts.set(key, (counts.get(key) ?? 0) + 1);
  },
});
const dataDir = mkdtempSync(join(tmpdir(), 'ferry-count-'));
// As the benchmark does: no request-rate limit (docs/limits.md).
writeFileSync(
  join(dataDir, 'plans.json'),
  JSON.stringify({ paid: { max_requests_per_second: 0 } }),
);
const { ferry, token } = await startFerryInProcess({
  root,
  dataDir,
  args: ['--plans-file', join(dataDir, 'plans.json')],
  driver,
});

let received = 0;
let expected = 0;
let allReceived = () => {};
const receiver = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    res.end('ok');
    if (++received === expected) allReceived();
  });
});
await new Promise((done) => receiver.listen(0, '127.0.0.1', done));
const destination = `http://127.0.0.1:${receiver.address().port}/hook`;
const agent = new http.Agent({ keepAlive: true, maxSockets: 200 });

const publish = () =>
  new Promise((done, fail) => {
    const req = http.request(
      `${ferry.url}/v2/publish/${destination}`,
      {
        method: 'POST',
        agent,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      },
      (res) => {
        res.resume();
        res.on('end', () =>
          res.statusCode < 300 ? done() : fail(new Error(`publish: ${res.statusCode}`)),
        );
      },
    );
    req.on('error', fail);
    req.end('{"hello":"world"}');
  });

async function deliver(count) {
  received = 0;
  expected = count;
  const all = new Promise((done) => (allReceived = done));
  const sent = [];
  if (rate !== undefined) {
    const start = performance.now();
    for (let i = 0; i < count; i++) {
      const at = start + (i * 1000) / rate;
      const wait = at - performance.now();
      if (wait > 0) await new Promise((done) => setTimeout(done, wait));
      sent.push(publish());
    }
  } else {
    let next = 0;
    const publisher = async () => {
      while (next < count) {
        next++;
        await publish();
      }
    };
    sent.push(...Array.from({ length: 200 }, publisher));
  }
  await Promise.all([...sent, all]);
}

const collections = { minor: 0, major: 0, pausedMs: 0 };
new PerformanceObserver((list) => {
  if (!measuring) return;
  for (const entry of list.getEntries()) {
    if (entry.detail?.kind === constants.NODE_PERFORMANCE_GC_MINOR) collections.minor++;
    if (entry.detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) collections.major++;
    collections.pausedMs += entry.duration;
  }
}).observe({ entryTypes: ['gc'] });

// Printed once the schema is dropped: a closed standard output (`| head`) cannot leave it behind.
const report = [];
try {
  await deliver(500);
  measuring = true;
  const started = performance.now();
  await deliver(n);
  measuring = false;
  const total = [...counts.values()].reduce((sum, c) => sum + c, 0);
  const mode = rate === undefined ? '200 concurrent publishers' : `${rate} msg/s`;
  report.push(
    `${n} messages (${mode}) in ${((performance.now() - started) / 1000).toFixed(1)} s: ` +
      `${total} statements, ${(total / n).toFixed(2)} per message`,
    `garbage collections of this thread: ${collections.minor} minor, ${collections.major} major, ` +
      `${collections.pausedMs.toFixed(0)} ms paused in all`,
  );
  for (const [text, count] of [...counts].sort((a, b) => b[1] - a[1])) {
    report.push(`${String(count).padStart(7)} ${(count / n).toFixed(3).padStart(6)}  ${text}`);
  }
} finally {
  await ferry.stop();
  receiver.close();
  agent.destroy();
  const admin = postgres(url, { max: 1, onnotice: () => {} });
  await admin.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await admin.end();
  rmSync(dataDir, { recursive: true, force: true });
}
console.log(report.join('\n'));
