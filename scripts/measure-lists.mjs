#!/usr/bin/env node
/**
 * Measures issue 21.1 (docs/limits.md, "Limits per request"): a Ferry holding N failed messages
 * of S bytes each (each as a DLQ entry and a CREATED event, as a failing destination leaves them)
 * is listed page by page through GET /v2/events and GET /v2/dlq while /health is polled. Prints
 * the server's peak RSS, the slowest page and the slowest /health answer.
 *
 *     npm run build && node scripts/measure-lists.mjs --count 1000 --size 10485760
 *     node scripts/measure-lists.mjs --count 200 --database-url postgres://postgres@127.0.0.1/test
 *
 * The data is written straight into the storage (through the driver) between two starts:
 * publishing 10 GB through a failing destination would measure the engine, not the lists. On
 * PostgreSQL it goes into a fresh schema, dropped at the end. `--rounds n` lists everything n
 * times (more /health samples). Besides /health as this script sees it, the server's own
 * event-loop delay over the listing is read from its /metrics (prom-client's
 * `nodejs_eventloop_lag_max_seconds`, reset at every scrape: one scrape before, one after).
 * The same figures of one second before the listing, while the server has nothing to do
 * (`idle`), show what the machine's load alone costs. `longestStretch` is the server's longest
 * synchronous stretch in CPU time, which the load does not lengthen (scripts/stall-monitor.mjs).
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { openPostgresDriver } from '../dist/storage/postgres/postgres-driver.js';
import { openSqliteDriver } from '../dist/storage/sqlite/sqlite-driver.js';
import { newDlqId, newMessageId } from '../dist/core/ids.js';
import {
  cpuMsOf,
  eventLoopLagMaxMs,
  longestStretch,
  nowMs,
  startHealthPoller,
  startServer,
  stopServer,
  summary,
  waitForCredentials,
  waitHealthy,
} from './measure-helpers.mjs';

const { values } = parseArgs({
  options: {
    count: { type: 'string', default: '1000' },
    size: { type: 'string', default: String(10 * 1024 * 1024) },
    port: { type: 'string', default: '18431' },
    // A directory: the server runs with `node --cpu-prof` and writes its profile there on exit.
    profile: { type: 'string' },
    'database-url': { type: 'string' },
    rounds: { type: 'string', default: '1' },
  },
});
const databaseUrl = values['database-url'];
const schema = `ferry_lists_${process.pid}`;
// PostgreSQL needs a key to seal stored secrets (any, for one run).
const storageArgs = databaseUrl
  ? [
      ...['--database-url', databaseUrl, '--database-schema', schema],
      ...['--secret-key', randomBytes(32).toString('base64')],
    ]
  : [];
const load = () => loadavg().map((l) => Math.round(l * 10) / 10);
const loadAtStart = load();
const count = Number(values.count);
const size = Number(values.size);
const base = `http://127.0.0.1:${values.port}`;
const dir = mkdtempSync(join(tmpdir(), 'ferry-lists-'));
const start = () =>
  startServer({ dir, port: values.port, profileDir: values.profile, args: storageArgs });
// The first start creates the account; the data is written while no server holds the file (one
// process per SQLite file), then the server starts again on it.
let server = start();
const rssMiB = () => {
  const status = readFileSync(`/proc/${server.pid}/status`, 'utf8');
  const kb = (name) => Number(new RegExp(`${name}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
  return { rss: kb('VmRSS') / 1024, peak: kb('VmHWM') / 1024 };
};

try {
  await waitHealthy(base);
  await waitForCredentials(dir);
  const { token, accountId } = JSON.parse(readFileSync(join(dir, 'credentials.json'), 'utf8'));
  const auth = { authorization: `Bearer ${token}` };

  await stopServer(server);
  // Seed in transactions of 10 messages (one fresh random body each).
  const driver = databaseUrl
    ? openPostgresDriver({ url: databaseUrl, schema })
    : openSqliteDriver({ path: join(dir, 'ferry.db') });
  const seedStart = Date.now();
  for (let done = 0; done < count; done += 10) {
    const now = Date.now();
    const messages = [];
    for (let i = done; i < Math.min(count, done + 10); i++) {
      messages.push({
        id: newMessageId(now),
        accountId,
        url: 'https://example.com/fails',
        callerIp: '127.0.0.1',
        retried: 0,
        maxRetries: 0,
        notBefore: now,
        createdAt: now,
        dueAt: now,
        spec: { method: 'POST', headers: {} },
        body: randomBytes(size),
      });
    }
    await driver.executor.transaction(async (tx) => {
      await tx.eventInsertMany({
        events: messages.map((m) => ({
          messageId: m.id,
          accountId,
          url: m.url,
          method: 'POST',
          callerIp: m.callerIp,
          time: now,
          state: 'CREATED',
          retried: 0,
          maxRetries: 0,
          header: {},
          body: m.body,
        })),
      });
      await tx.dlqInsertMany({
        entries: messages.map((m) => ({
          dlqId: newDlqId(now),
          message: m,
          createdAt: now,
          expiresAt: now + 86_400_000,
        })),
      });
    });
  }
  await driver.close();
  const seedMs = Date.now() - seedStart;
  server = start();
  await waitHealthy(base);
  const rssBefore = rssMiB();

  // Poll /health every 20 ms (on a thread of its own) and sample RSS while the lists are read.
  const poller = startHealthPoller(base, 20);
  let rssMax = 0;
  const rssTimer = setInterval(() => (rssMax = Math.max(rssMax, rssMiB().rss)), 20);
  // A second with nothing to do first: how /health answers on this machine at its present load.
  await eventLoopLagMaxMs(base);
  const idleStart = nowMs();
  const idleEnd = idleStart + 1000;
  await new Promise((r) => setTimeout(r, 1000));
  const idleLagMaxMs = await eventLoopLagMaxMs(base);
  const listStart = nowMs();
  const cpuBefore = cpuMsOf(server.pid);

  const lists = {};
  for (let round = 0; round < Number(values.rounds); round++)
    for (const [name, path, key] of [
      ['events', '/v2/events?count=1000', 'events'],
      ['dlq', '/v2/dlq?count=100', 'messages'],
    ]) {
      const pageMs = [];
      let items = 0;
      let bytes = 0;
      let cursor = '';
      do {
        const t0 = performance.now();
        const res = await fetch(`${base}${path}${cursor ? `&cursor=${cursor}` : ''}`, {
          headers: auth,
        });
        const text = await res.text();
        pageMs.push(performance.now() - t0);
        if (!res.ok) throw new Error(`${path}: ${res.status} ${text.slice(0, 200)}`);
        const page = JSON.parse(text);
        items += page[key].length;
        bytes = Math.max(bytes, Buffer.byteLength(text));
        cursor = page.cursor;
      } while (cursor);
      const before = lists[name];
      lists[name] = {
        items,
        pages: pageMs.length,
        slowestPageMs: Math.max(before?.slowestPageMs ?? 0, Math.round(Math.max(...pageMs))),
        largestPageBytes: bytes,
      };
    }
  const listEnd = nowMs();
  const serverCpuMs = cpuMsOf(server.pid) - cpuBefore;
  const lagMaxMs = await eventLoopLagMaxMs(base);
  const samples = await poller.stop();
  const health = summary(samples.filter((s) => s.at >= listStart));
  const idleHealth = summary(samples.filter((s) => s.at + s.ms <= idleEnd));
  clearInterval(rssTimer);
  rssMax = Math.max(rssMax, rssMiB().rss);
  const rssPeak = rssMiB().peak;
  await stopServer(server);
  console.log(
    JSON.stringify(
      {
        storage: databaseUrl ? 'postgres' : 'sqlite',
        count,
        size,
        rounds: Number(values.rounds),
        loadAverage: { atStart: loadAtStart, atEnd: load() },
        seedMs,
        rssMiBBeforeLists: Math.round(rssBefore.rss),
        rssMiBMaxDuringLists: Math.round(rssMax),
        rssMiBPeak: Math.round(rssPeak),
        lists,
        // CPU time of the server while listing (all rounds), and per page.
        serverCpuMs,
        serverCpuMsPerPage: Math.round(
          serverCpuMs /
            Object.values(lists).reduce((n, l) => n + l.pages * Number(values.rounds), 0),
        ),
        health,
        eventLoopLagMaxMs: lagMaxMs,
        longestStretch: longestStretch(dir, listStart, listEnd),
        idle: {
          health: idleHealth,
          eventLoopLagMaxMs: idleLagMaxMs,
          longestStretch: longestStretch(dir, idleStart, idleEnd),
        },
      },
      null,
      2,
    ),
  );
} finally {
  await stopServer(server);
  rmSync(dir, { recursive: true, force: true });
  if (databaseUrl) {
    const { default: postgres } = await import('postgres');
    const sql = postgres(databaseUrl, { onnotice: () => undefined, max: 1 });
    await sql.unsafe(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await sql.end();
  }
}
