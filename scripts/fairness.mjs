// The full-scale measurement of issue 14 point 3 (test/fairness.test.ts runs a scaled one):
// starts the built Ferry (`npm run build` first) in this process with default settings on a
// fresh SQLite data directory (or PostgreSQL with `--postgres`, from TEST_DATABASE_URL), a
// healthy receiver and a hanging one on 127.0.0.1, and a URL that refuses connections. It
// measures the healthy destination's publish→arrival p50/p99 for 50 messages published one every
// 20 ms, unloaded, then three times while the hanging and the refused destination each hold
// BACKLOG waiting messages (default 10,000; `--backlog N`): right after publishing the backlogs,
// and 15 s and 30 s after. Of 50 samples the p99 is the slowest one.
//
//   node scripts/fairness.mjs [--backlog N] [--postgres] [--only hanging|refused]
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { createServer as createTcpServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { startFerryInProcess } from './measure-helpers.mjs';

const { openPostgresDriver } = await import('../dist/storage/postgres/postgres-driver.js');

const argv = process.argv.slice(2);
const backlog = Number(argv[argv.indexOf('--backlog') + 1] || 10_000) || 10_000;
const postgres = argv.includes('--postgres');
// `--only hanging` or `--only refused`: one bad destination instead of both.
const only = argv.includes('--only') ? argv[argv.indexOf('--only') + 1] : undefined;

function receiver(hang) {
  const arrivals = new Map();
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      arrivals.set(hang ? arrivals.size : req.url, Date.now());
      if (!hang) res.end('ok');
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({ server, arrivals, url: `http://127.0.0.1:${server.address().port}` }),
    ),
  );
}

async function refusingUrl() {
  const s = createTcpServer();
  await new Promise((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address();
  await new Promise((r) => s.close(r));
  return `http://127.0.0.1:${port}`;
}

const dataDir = mkdtempSync(join(tmpdir(), 'ferry-fairness-'));
const schema = `ferry_fairness_${randomBytes(4).toString('hex')}`;
const driver = postgres
  ? openPostgresDriver({ url: process.env.TEST_DATABASE_URL, schema })
  : undefined;
const { ferry, token } = await startFerryInProcess({ root: '..', dataDir, driver });
const api = (path, init = {}) =>
  fetch(`${ferry.url}${path}`, { ...init, headers: { authorization: `Bearer ${token}` } });

const healthy = await receiver(false);
const hanging = await receiver(true);
let seq = 0;

async function measure(count) {
  const sent = new Map();
  for (let i = 0; i < count; i++) {
    const path = `/g/${seq++}`;
    sent.set(path, Date.now());
    await api(`/v2/publish/${healthy.url}${path}`, { method: 'POST', body: 'g' });
    await new Promise((r) => setTimeout(r, 20));
  }
  const deadline = Date.now() + 60_000;
  while ([...sent.keys()].some((p) => !healthy.arrivals.has(p)) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 10));
  }
  const lat = [...sent].map(([p, at]) => (healthy.arrivals.get(p) ?? Infinity) - at);
  lat.sort((a, b) => a - b);
  const q = (f) => lat[Math.ceil(lat.length * f) - 1];
  return { p50: q(0.5), p99: q(0.99), max: lat.at(-1) };
}

async function fill(destination) {
  let first;
  for (let sent = 0; sent < backlog; sent += 1_000) {
    const entries = Array.from({ length: Math.min(1_000, backlog - sent) }, () => ({
      destination,
      body: 'x',
    }));
    const res = await api('/v2/batch', { method: 'POST', body: JSON.stringify(entries) });
    const ids = await res.json();
    first ??= ids[0].messageId;
  }
  return first;
}

/** Whether the message had an attempt within `waitMs` (its RETRY event is in the log). */
async function attempted(id, waitMs) {
  const deadline = Date.now() + waitMs;
  for (;;) {
    const res = await api(`/v2/events?messageId=${id}&state=RETRY`);
    if ((await res.json()).events.length > 0) return true;
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 200));
  }
}

await measure(10); // warm-up
const unloaded = await measure(50);
console.log(`storage ${postgres ? 'postgres' : 'sqlite'}, backlog ${backlog} per bad destination`);
console.log('unloaded', unloaded);
const filled = Date.now();
if (only !== 'refused') await fill(`${hanging.url}/h`);
const firstRefused = only === 'hanging' ? undefined : await fill(`${await refusingUrl()}/r`);
console.log(
  `published ${only ? only : 'hanging and refused'}, ${backlog} each, in ${Date.now() - filled} ms`,
);
// While both backlogs wait: right after publishing them (the refused origin's first attempts),
// then twice more, when the first retries of its attempted messages come due (default backoff:
// 12 s) and the hanging origin's held messages come back.
const phases = [['right after', await measure(50)]];
for (const at of [15_000, 30_000]) {
  await new Promise((r) => setTimeout(r, Math.max(0, filled + at - Date.now())));
  phases.push([`${at / 1000} s after`, await measure(50)]);
}
for (const [name, m] of phases) {
  console.log(`loaded (${name})`, m, `p99 ratio ${(m.p99 / unloaded.p99).toFixed(2)}`);
}
console.log(
  `hanging receiver got ${hanging.arrivals.size}; first refused message attempted: ${firstRefused && (await attempted(firstRefused, 1_000))}`,
);

healthy.server.closeAllConnections();
hanging.server.closeAllConnections();
healthy.server.close();
hanging.server.close();
await ferry.stop();
if (postgres) {
  const { default: pg } = await import('postgres');
  const sql = pg(process.env.TEST_DATABASE_URL, { onnotice: () => undefined });
  await sql.unsafe(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await sql.end();
}
rmSync(dataDir, { recursive: true, force: true });
