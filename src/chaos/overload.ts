/**
 * Overload: publish `messages` as fast as the load generator can (batches of 1,000 from 8
 * clients), far beyond what the node delivers, while sampling its RSS; then single publishes
 * from 128 clients against that backlog (latency and statuses); then wait for the backlog to
 * drain and check that every accepted message was delivered.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import {
  loadAgent,
  paced,
  publish,
  quantile,
  startChaosReceiver,
  startNode,
  until,
} from './harness.js';
import { chaosStorage } from './storage.js';
import { sample, type Sample } from './probe.js';

export interface OverloadReport {
  storage: string;
  messages: number;
  accepted: number;
  fillSeconds: number;
  batchStatuses: Record<string, number>;
  /** Time to answer a batch of 1,000 during the fill (accepted or refused), ms. */
  batch: { p50: number; p99: number; max: number };
  peakRssMb: number;
  rssAfterDrainMb: number;
  dbMbPeak: number;
  single: {
    count: number;
    p50: number;
    p99: number;
    max: number;
    /** The same quantiles over the publishes answered 200 only. */
    acceptedP99: number;
    acceptedMax: number;
    statuses: Record<string, number>;
  };
  /** Messages the node says it stored (`ferry_messages_published_total`): must equal `accepted`. */
  stored: number;
  /** The machine's 1-minute load average at the start and end. */
  load: [number, number];
  drainSeconds: number;
  drained: boolean;
  acceptedNotDelivered: number;
}

export async function runOverload(o: {
  storage: 'sqlite' | 'postgres';
  databaseUrl?: string;
  messages: number;
  /** Longest wait for the backlog to drain, ms (default: 10 ms per message, at least 2 min). */
  drainTimeoutMs?: number;
  log?: (line: string) => void;
}): Promise<OverloadReport> {
  const log = o.log ?? (() => undefined);
  const dir = mkdtempSync(join(tmpdir(), 'ferry-chaos-overload-'));
  const storage = chaosStorage(o.storage, o.databaseUrl);
  const args = storage.args;
  const receiver = await startChaosReceiver('fast', { light: true });
  const node = await startNode({ dataDir: dir, args });
  const { baseUrl, token } = node;
  const probe = () => sample({ baseUrl, dataDir: dir, postgres: storage.postgres });
  const samples: Sample[] = [];
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      try {
        samples.push(await probe());
      } catch {
        // a scrape that timed out under load: skip it
      }
      await new Promise((r) => setTimeout(r, 2_000));
    }
  })();
  const accepted = new Set<string>();
  const batchStatuses: Record<string, number> = {};
  const batchLatencies: number[] = [];
  const loadAtStart = loadavg()[0] ?? 0;
  try {
    const fillStarted = Date.now();
    let next = 0;
    const filler = async (): Promise<void> => {
      while (next < o.messages) {
        const n = Math.min(1_000, o.messages - next);
        next += n;
        const entries = Array.from({ length: n }, (_, i) => ({
          destination: `${receiver.url}/o${next + i}`,
          body: 'overload',
        }));
        const sentAt = performance.now();
        const res = await request(`${baseUrl}/v2/batch`, {
          method: 'POST',
          dispatcher: loadAgent,
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: JSON.stringify(entries),
          headersTimeout: 120_000,
          bodyTimeout: 120_000,
        });
        const text = await res.body.text();
        batchLatencies.push(performance.now() - sentAt);
        batchStatuses[res.statusCode] = (batchStatuses[res.statusCode] ?? 0) + 1;
        if (res.statusCode === 200) {
          for (const e of JSON.parse(text) as { messageId: string }[]) accepted.add(e.messageId);
        } else {
          next -= n; // refused (429/503): offer it again after its Retry-After
          const retryAfter = Number(res.headers['retry-after'] ?? 1);
          await new Promise((r) =>
            setTimeout(r, 1_000 * (Number.isFinite(retryAfter) ? retryAfter : 1)),
          );
        }
      }
    };
    await Promise.all(Array.from({ length: 8 }, filler));
    const fillSeconds = (Date.now() - fillStarted) / 1000;
    log(
      `  overload (${o.storage}): ${accepted.size} accepted in ${fillSeconds.toFixed(0)} s, ` +
        `${receiver.seen.size} delivered meanwhile`,
    );

    const latencies: number[] = [];
    const acceptedLatencies: number[] = [];
    const singleStatuses: Record<string, number> = {};
    const singleEnd = Date.now() + 10_000;
    await paced({
      rate: 100_000,
      concurrency: 128,
      stop: () => Date.now() > singleEnd,
      send: async (i) => {
        const res = await publish({
          baseUrl,
          token,
          destination: `${receiver.url}/single${i}`,
          timeoutMs: 60_000,
        });
        latencies.push(res.latencyMs);
        singleStatuses[res.status] = (singleStatuses[res.status] ?? 0) + 1;
        if (res.status === 200 && res.messageId) {
          accepted.add(res.messageId);
          acceptedLatencies.push(res.latencyMs);
        }
      },
    });

    const drainStarted = Date.now();
    const drained = await until(
      () =>
        receiver.seen.size >= accepted.size && [...accepted].every((id) => receiver.seen.has(id)),
      o.drainTimeoutMs ?? Math.max(120_000, o.messages * 10),
    );
    const drainSeconds = (Date.now() - drainStarted) / 1000;
    const after = await probe();
    const stored = await publishedCount(baseUrl);
    return {
      storage: o.storage,
      messages: o.messages,
      accepted: accepted.size,
      fillSeconds,
      batchStatuses,
      batch: {
        p50: quantile(batchLatencies, 0.5),
        p99: quantile(batchLatencies, 0.99),
        max: Math.max(...batchLatencies),
      },
      stored,
      load: [loadAtStart, loadavg()[0] ?? 0],
      peakRssMb: Math.max(...samples.map((s) => s.rssMb), after.rssMb),
      rssAfterDrainMb: after.rssMb,
      dbMbPeak: Math.max(...samples.map((s) => s.dbMb), after.dbMb),
      single: {
        count: latencies.length,
        p50: quantile(latencies, 0.5),
        p99: quantile(latencies, 0.99),
        max: Math.max(...latencies),
        acceptedP99: quantile(acceptedLatencies, 0.99),
        acceptedMax: Math.max(...acceptedLatencies),
        statuses: singleStatuses,
      },
      drainSeconds,
      drained,
      acceptedNotDelivered: [...accepted].filter((id) => !receiver.seen.has(id)).length,
    };
  } finally {
    sampling = false;
    await sampler;
    node.proc.kill('SIGKILL');
    await node.exited;
    await receiver.close();
    await storage.drop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Messages the node stored, by its own count (every kind of `ferry_messages_published_total`). */
async function publishedCount(baseUrl: string): Promise<number> {
  const res = await request(`${baseUrl}/metrics`, { dispatcher: loadAgent });
  let sum = 0;
  for (const line of (await res.body.text()).split('\n')) {
    if (line.startsWith('ferry_messages_published_total{')) sum += Number(line.split(' ').at(-1));
  }
  return sum;
}

export function formatOverload(r: OverloadReport): string[] {
  return [
    `overload (${r.storage}): ${r.accepted} accepted of ${r.messages} offered in ${r.fillSeconds.toFixed(0)} s ` +
      `(batch statuses ${JSON.stringify(r.batchStatuses)}); load average ${r.load[0].toFixed(1)} → ${r.load[1].toFixed(1)}`,
    `  batches of 1,000 (8 clients): answered in p50 ${r.batch.p50.toFixed(0)} ms, p99 ${r.batch.p99.toFixed(0)} ms, max ${r.batch.max.toFixed(0)} ms`,
    `  peak RSS ${r.peakRssMb.toFixed(0)} MB, after drain ${r.rssAfterDrainMb.toFixed(0)} MB; database peak ${r.dbMbPeak.toFixed(0)} MB`,
    `  single publishes against the backlog (128 clients, 10 s): ${r.single.count}, ` +
      `p50 ${r.single.p50.toFixed(0)} ms, p99 ${r.single.p99.toFixed(0)} ms, max ${r.single.max.toFixed(0)} ms, ` +
      `statuses ${JSON.stringify(r.single.statuses)}; answered 200: p99 ${r.single.acceptedP99.toFixed(0)} ms, max ${r.single.acceptedMax.toFixed(0)} ms`,
    `  backlog ${r.drained ? 'drained' : 'NOT drained'} in ${r.drainSeconds.toFixed(0)} s; accepted but not delivered: ${r.acceptedNotDelivered}; ` +
      `stored by the node's count ${r.stored} (refused and stored: ${r.stored - r.accepted})`,
  ];
}
