#!/usr/bin/env node
/**
 * Measures issue 21.2 (docs/limits.md, "Limits per request"): one publish of a SIZE-byte body to
 * a URL group of N endpoints, on a fresh SQLite Ferry running only the API role (no delivery, so
 * only the publish writes). Prints the request's time, the bytes the server process wrote
 * (/proc/<pid>/io write_bytes: database and WAL) and /health latencies polled every 10 ms from
 * another process's point of view (this script, on a thread of its own) while the publish runs,
 * and the server's longest event-loop delay over the publishes (from its /metrics).
 * `--repeat n` publishes n times, one after the other; the /health figures are of the answers
 * asked while a publish ran. The same figures of one second before the first publish, while the
 * server has nothing to do (`idle`), show what the machine's load alone costs. `longestStretch` is
 * the server's longest synchronous stretch in CPU time, which the load does not lengthen
 * (scripts/stall-monitor.mjs).
 *
 *     npm run build && node scripts/measure-fanout.mjs --endpoints 200 --size 1048576
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import * as measure from './measure-helpers.mjs';

const { values } = parseArgs({
  options: {
    endpoints: { type: 'string', default: '200' },
    size: { type: 'string', default: String(1024 * 1024) },
    port: { type: 'string', default: '18432' },
    // A directory: the server runs with `node --cpu-prof` and writes its profile there on exit.
    profile: { type: 'string' },
    repeat: { type: 'string', default: '1' },
  },
});
const base = `http://127.0.0.1:${values.port}`;
const dir = mkdtempSync(join(tmpdir(), 'ferry-fanout-'));
const server = measure.startServer({
  dir,
  port: values.port,
  profileDir: values.profile,
  args: ['--roles', 'api'],
});
const written = () =>
  Number(/write_bytes:\s+(\d+)/.exec(readFileSync(`/proc/${server.pid}/io`, 'utf8'))?.[1] ?? 0);

try {
  await measure.waitHealthy(base);
  await measure.waitForCredentials(dir);
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
  const loadAtStart = loadavg();
  const poller = measure.startHealthPoller(base, 10);
  // A second with nothing to do first: how /health answers on this machine at its present load.
  await measure.eventLoopLagMaxMs(base);
  const idleStart = measure.nowMs();
  await new Promise((r) => setTimeout(r, 1000));
  const idleEnd = measure.nowMs();
  const idleLagMaxMs = await measure.eventLoopLagMaxMs(base);
  const before = written();
  const cpuBefore = measure.cpuMsOf(server.pid);
  const publishes = [];
  for (let i = 0; i < Number(values.repeat); i++) {
    const start = measure.nowMs();
    const res = await fetch(`${base}/v2/publish/group`, { method: 'POST', headers: auth, body });
    await res.text();
    publishes.push({ start, end: measure.nowMs(), status: res.status });
    await new Promise((r) => setTimeout(r, 100));
  }
  const lagMaxMs = await measure.eventLoopLagMaxMs(base);
  const samples = await poller.stop();
  // The answers asked while a publish ran (or answered while one ran).
  const during = samples.filter((s) =>
    publishes.some((p) => s.at < p.end && s.at + s.ms > p.start),
  );
  const idle = samples.filter((s) => s.at >= idleStart && s.at + s.ms <= idleEnd);
  const round = (l) => l.map((x) => Math.round(x * 10) / 10);
  const writtenMiB = Math.round((written() - before) / 1048576);
  const serverCpuMs = measure.cpuMsOf(server.pid) - cpuBefore;
  await measure.stopServer(server);
  console.log(
    JSON.stringify({
      endpoints: endpoints.length,
      size: body.length,
      loadAverage: { atStart: round(loadAtStart), atEnd: round(loadavg()) },
      status: [...new Set(publishes.map((p) => p.status))],
      requestMs: publishes.map((p) => Math.round(p.end - p.start)),
      writtenMiB,
      // CPU time of the server over the publishes (and the pauses of 100 ms between them).
      serverCpuMsPerPublish: Math.round(serverCpuMs / publishes.length),
      healthDuringPublish: measure.summary(during),
      eventLoopLagMaxMs: lagMaxMs,
      longestStretch: measure.longestStretch(dir, publishes[0]?.start ?? 0, measure.nowMs()),
      idle: {
        health: measure.summary(idle),
        eventLoopLagMaxMs: idleLagMaxMs,
        longestStretch: measure.longestStretch(dir, idleStart, idleEnd),
      },
    }),
  );
} finally {
  await measure.stopServer(server);
  rmSync(dir, { recursive: true, force: true });
}
