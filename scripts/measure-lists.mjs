#!/usr/bin/env node
/**
 * Measures issue 21.1 (docs/limits.md, "Limits per request"): a Ferry holding N failed messages
 * of S bytes each (each as a DLQ entry and a CREATED event, as a failing destination leaves them)
 * is listed page by page through GET /v2/events and GET /v2/dlq while /health is polled. Prints
 * the server's peak RSS, the slowest page and the slowest /health answer.
 *
 *     npm run build && node scripts/measure-lists.mjs --count 1000 --size 10485760
 *
 * The data is written straight into the SQLite file (through the driver) between two starts:
 * publishing 10 GB through a failing destination would measure the engine, not the lists.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { openSqliteDriver } from '../dist/storage/sqlite/sqlite-driver.js';
import { newDlqId, newMessageId } from '../dist/core/ids.js';

const { values } = parseArgs({
  options: {
    count: { type: 'string', default: '1000' },
    size: { type: 'string', default: String(10 * 1024 * 1024) },
    port: { type: 'string', default: '18431' },
  },
});
const count = Number(values.count);
const size = Number(values.size);
const base = `http://127.0.0.1:${values.port}`;
const dir = mkdtempSync(join(tmpdir(), 'ferry-lists-'));

const start = () =>
  spawn(
    process.execPath,
    ['dist/cli/main.js', 'start', '--data-dir', dir, '--port', values.port, '--plan', 'paid'],
    { stdio: ['ignore', 'ignore', 'inherit'] },
  );
const stop = async (child) => {
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
};
// The first start creates the account; the data is written while no server holds the file (one
// process per SQLite file), then the server starts again on it.
let server = start();
const rssMiB = () => {
  const status = readFileSync(`/proc/${server.pid}/status`, 'utf8');
  const kb = (name) => Number(new RegExp(`${name}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
  return { rss: kb('VmRSS') / 1024, peak: kb('VmHWM') / 1024 };
};

async function waitHealthy() {
  for (let i = 0; i < 200; i++) {
    try {
      if ((await fetch(`${base}/health`)).ok) return;
    } catch {}
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('server did not start');
}

try {
  await waitHealthy();
  const { token, accountId } = JSON.parse(readFileSync(join(dir, 'credentials.json'), 'utf8'));
  const auth = { authorization: `Bearer ${token}` };

  await stop(server);
  // Seed in transactions of 10 messages (one fresh random body each).
  const driver = openSqliteDriver({ path: join(dir, 'ferry.db') });
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
  await waitHealthy();
  const rssBefore = rssMiB();

  // Poll /health every 20 ms and sample RSS while the lists are read.
  const health = [];
  let polling = true;
  let rssMax = 0;
  const poller = (async () => {
    while (polling) {
      const t0 = performance.now();
      await fetch(`${base}/health`);
      health.push(performance.now() - t0);
      rssMax = Math.max(rssMax, rssMiB().rss);
      await new Promise((r) => setTimeout(r, 20));
    }
  })();

  const lists = {};
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
    lists[name] = {
      items,
      pages: pageMs.length,
      slowestPageMs: Math.round(Math.max(...pageMs)),
      largestPageBytes: bytes,
    };
  }
  polling = false;
  await poller;
  health.sort((a, b) => a - b);
  const at = (q) => Math.round(health[Math.min(health.length - 1, Math.floor(q * health.length))]);
  console.log(
    JSON.stringify(
      {
        count,
        size,
        seedMs,
        rssMiBBeforeLists: Math.round(rssBefore.rss),
        rssMiBMaxDuringLists: Math.round(rssMax),
        rssMiBPeak: Math.round(rssMiB().peak),
        lists,
        health: { samples: health.length, p50Ms: at(0.5), p99Ms: at(0.99), maxMs: at(1) },
      },
      null,
      2,
    ),
  );
} finally {
  if (server.exitCode === null) await stop(server);
  rmSync(dir, { recursive: true, force: true });
}
