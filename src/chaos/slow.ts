/**
 * Slow and dead destinations: the healthy destination's publish→arrival p50/p99 unloaded, then
 * while a destination that never answers and one that refuses connections each hold `backlog`
 * waiting messages (the method of scripts/fairness.mjs, against the built `ferry start`): first
 * right after the backlogs were published (while the engine still sorts them out of the way),
 * then in the next second, while they wait. This case measures and reports; the fairness itself
 * is the engine's (issue 14).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { loadAgent, publish, quantile, startChaosReceiver, startNode, until } from './harness.js';
import { chaosStorage } from './storage.js';

export interface SlowReport {
  storage: string;
  backlog: number;
  unloaded: { p50: number; p99: number };
  /** Right after the backlogs were published, and the first message's latency. */
  loaded: { p50: number; p99: number; first: number };
  /** The 50 messages after those, while the backlogs wait. */
  waiting: { p50: number; p99: number };
  hangingRequests: number;
}

async function refusingUrl(): Promise<string> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as { port: number };
  await new Promise((r) => s.close(r));
  return `http://127.0.0.1:${port}`;
}

export async function runSlow(o: {
  storage: 'sqlite' | 'postgres';
  databaseUrl?: string;
  backlog: number;
  log?: (line: string) => void;
}): Promise<SlowReport> {
  const log = o.log ?? (() => undefined);
  const dir = mkdtempSync(join(tmpdir(), 'ferry-chaos-slow-'));
  const storage = chaosStorage(o.storage, o.databaseUrl);
  const args = storage.args;
  const healthy = await startChaosReceiver('fast');
  const hanging = await startChaosReceiver('hang');
  const node = await startNode({ dataDir: dir, args });
  const { baseUrl, token } = node;
  let seq = 0;
  const measure = async (count: number): Promise<{ p50: number; p99: number; first: number }> => {
    const sent = new Map<string, number>();
    for (let i = 0; i < count; i++) {
      const started = Date.now();
      const res = await publish({ baseUrl, token, destination: `${healthy.url}/g${seq++}` });
      if (res.messageId) sent.set(res.messageId, started);
      await new Promise((r) => setTimeout(r, 20));
    }
    await until(() => [...sent.keys()].every((id) => healthy.byMessage.has(id)), 120_000);
    const latencies = [...sent].map(
      ([id, at]) => (healthy.byMessage.get(id)?.[0]?.at ?? Number.POSITIVE_INFINITY) - at,
    );
    return {
      p50: quantile(latencies, 0.5),
      p99: quantile(latencies, 0.99),
      first: latencies[0] ?? Number.NaN,
    };
  };
  const fill = async (destination: string): Promise<void> => {
    for (let sent = 0; sent < o.backlog; sent += 1_000) {
      const n = Math.min(1_000, o.backlog - sent);
      const entries = Array.from({ length: n }, () => ({ destination, body: 'x' }));
      const res = await request(`${baseUrl}/v2/batch`, {
        method: 'POST',
        dispatcher: loadAgent,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify(entries),
      });
      await res.body.text();
      if (res.statusCode !== 200) throw new Error(`batch answered ${res.statusCode}`);
    }
  };
  try {
    await measure(10); // warm-up
    const unloaded = await measure(50);
    log(`  slow (${o.storage}): unloaded p50 ${unloaded.p50} ms, p99 ${unloaded.p99} ms`);
    await fill(`${hanging.url}/h`);
    await fill(`${await refusingUrl()}/r`);
    const loaded = await measure(50);
    const { p50, p99 } = await measure(50);
    return {
      storage: o.storage,
      backlog: o.backlog,
      unloaded: { p50: unloaded.p50, p99: unloaded.p99 },
      loaded,
      waiting: { p50, p99 },
      hangingRequests: hanging.requests,
    };
  } finally {
    node.proc.kill('SIGKILL');
    await node.exited;
    await healthy.close();
    await hanging.close();
    await storage.drop();
    rmSync(dir, { recursive: true, force: true });
  }
}

export function formatSlow(r: SlowReport): string[] {
  return [
    `slow destinations (${r.storage}): healthy destination publish→arrival, 50 messages 20 ms apart`,
    `  unloaded:  p50 ${r.unloaded.p50} ms, p99 ${r.unloaded.p99} ms`,
    `  with ${r.backlog} waiting for a hanging and ${r.backlog} for a refusing destination, ` +
      `right after they were published: p50 ${r.loaded.p50} ms, p99 ${r.loaded.p99} ms ` +
      `(the first message ${r.loaded.first} ms)`,
    `  the next second, while they wait: p50 ${r.waiting.p50} ms, p99 ${r.waiting.p99} ms ` +
      `(hanging destination got ${r.hangingRequests} requests)`,
  ];
}
