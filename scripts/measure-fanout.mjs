#!/usr/bin/env node
/**
 * Measures issue 21.2 (docs/limits.md, "Limits per request"): one publish of a SIZE-byte body to
 * a URL group of N endpoints, on a fresh SQLite Ferry running only the API role (no delivery, so
 * only the publish writes). Prints the request's time, the bytes the server process wrote
 * (/proc/<pid>/io write_bytes: database and WAL) and /health latencies polled every 10 ms from
 * another process's point of view (this script) while the publish runs.
 *
 *     npm run build && node scripts/measure-fanout.mjs --endpoints 200 --size 1048576
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    endpoints: { type: 'string', default: '200' },
    size: { type: 'string', default: String(1024 * 1024) },
    port: { type: 'string', default: '18432' },
  },
});
const base = `http://127.0.0.1:${values.port}`;
const dir = mkdtempSync(join(tmpdir(), 'ferry-fanout-'));
const server = spawn(
  process.execPath,
  [
    'dist/cli/main.js',
    'start',
    '--data-dir',
    dir,
    '--port',
    values.port,
    '--plan',
    'paid',
    '--roles',
    'api',
  ],
  { stdio: ['ignore', 'ignore', 'inherit'] },
);
const written = () =>
  Number(/write_bytes:\s+(\d+)/.exec(readFileSync(`/proc/${server.pid}/io`, 'utf8'))?.[1] ?? 0);

try {
  for (let i = 0; ; i++) {
    try {
      if ((await fetch(`${base}/health`)).ok) break;
    } catch {}
    if (i > 200) throw new Error('server did not start');
    await new Promise((r) => setTimeout(r, 100));
  }
  // The first start answers /health a moment before it has written its credentials file.
  for (let i = 0; !existsSync(join(dir, 'credentials.json')); i++) {
    if (i > 100) throw new Error('no credentials.json');
    await new Promise((r) => setTimeout(r, 100));
  }
  const { token } = JSON.parse(readFileSync(join(dir, 'credentials.json'), 'utf8'));
  const auth = { authorization: `Bearer ${token}` };
  const endpoints = Array.from({ length: Number(values.endpoints) }, (_, i) => ({
    url: `http://127.0.0.1:9/endpoint-${i}`,
  }));
  for (let i = 0; i < endpoints.length; i += 100) {
    const res = await fetch(`${base}/v2/topics/group/endpoints`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ endpoints: endpoints.slice(i, i + 100) }),
    });
    if (!res.ok) throw new Error(`group: ${res.status} ${await res.text()}`);
  }
  const body = Buffer.alloc(Number(values.size), 'a');
  const health = [];
  let polling = true;
  const poller = (async () => {
    while (polling) {
      const t0 = performance.now();
      await fetch(`${base}/health`);
      health.push(performance.now() - t0);
      await new Promise((r) => setTimeout(r, 10));
    }
  })();
  await new Promise((r) => setTimeout(r, 100));
  const before = written();
  const t0 = performance.now();
  const res = await fetch(`${base}/v2/publish/group`, { method: 'POST', headers: auth, body });
  const requestMs = performance.now() - t0;
  const status = res.status;
  await res.text();
  await new Promise((r) => setTimeout(r, 200));
  polling = false;
  await poller;
  health.sort((a, b) => a - b);
  const at = (q) => Math.round(health[Math.min(health.length - 1, Math.floor(q * health.length))]);
  console.log(
    JSON.stringify({
      endpoints: endpoints.length,
      size: body.length,
      status,
      requestMs: Math.round(requestMs),
      writtenMiB: Math.round((written() - before) / 1048576),
      health: { samples: health.length, p50Ms: at(0.5), p99Ms: at(0.99), maxMs: at(1) },
    }),
  );
} finally {
  server.kill('SIGTERM');
  await new Promise((r) => server.once('exit', r));
  rmSync(dir, { recursive: true, force: true });
}
