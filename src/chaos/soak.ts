/**
 * Soak: publish at a steady `rate` for `durationMs` to a fast, a slow and a failing destination,
 * sampling the node's RSS, open file descriptors, event-loop lag and database size every 10 s.
 * Reports the samples after warm-up (the first fifth of the run) so growth is visible, and checks
 * that every acknowledged message was delivered at the end.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { paced, publish, quantile, startChaosReceiver, startNode, until } from './harness.js';
import { chaosStorage } from './storage.js';
import { sample, type Sample } from './probe.js';

export interface SoakReport {
  storage: string;
  seconds: number;
  rate: number;
  eventRetention?: string;
  acknowledged: number;
  lost: number;
  publishP99Ms: number;
  /** Samples after warm-up. */
  samples: Sample[];
}

export async function runSoak(o: {
  storage: 'sqlite' | 'postgres';
  databaseUrl?: string;
  durationMs: number;
  rate: number;
  /** The node's `--event-retention` (default: Ferry's, 7 days), to see the events log level off. */
  eventRetention?: string;
  log?: (line: string) => void;
}): Promise<SoakReport> {
  const log = o.log ?? (() => undefined);
  const dir = mkdtempSync(join(tmpdir(), 'ferry-chaos-soak-'));
  const storage = chaosStorage(o.storage, o.databaseUrl);
  const args = [...storage.args];
  if (o.eventRetention) args.push('--event-retention', o.eventRetention);
  const receivers = await Promise.all(
    (['fast', 'slow', 'errors'] as const).map((b) => startChaosReceiver(b, { light: true })),
  );
  const node = await startNode({ dataDir: dir, args });
  const { baseUrl, token } = node;
  const samples: Sample[] = [];
  const acked = new Set<string>();
  const latencies: number[] = [];
  const started = Date.now();
  const end = started + o.durationMs;
  try {
    const sampler = (async () => {
      while (Date.now() < end) {
        await new Promise((r) =>
          setTimeout(r, Math.min(10_000, Math.max(1_000, end - Date.now()))),
        );
        try {
          const s = await sample({
            baseUrl,
            dataDir: dir,
            postgres: storage.postgres,
          });
          samples.push(s);
          log(
            `  soak (${o.storage}) ${((s.at - started) / 1000).toFixed(0)} s: RSS ${s.rssMb.toFixed(0)} MB, ` +
              `fds ${s.openFds}, lag p99 ${s.lagP99Ms.toFixed(1)} ms, db ${s.dbMb.toFixed(1)} MB, ${acked.size} acknowledged`,
          );
        } catch {
          // a scrape that failed: skip it
        }
      }
    })();
    await paced({
      rate: o.rate,
      concurrency: 32,
      stop: () => Date.now() > end,
      send: async (i) => {
        const dest = receivers[i % receivers.length];
        const res = await publish({
          baseUrl,
          token,
          destination: `${dest?.url}/soak${i}`,
          headers: { 'Svc-Retries': '20', 'Svc-Retry-Delay': '100' },
        });
        latencies.push(res.latencyMs);
        if (latencies.length > 200_000) latencies.splice(0, 100_000);
        if (res.status === 200 && res.messageId) acked.add(res.messageId);
      },
    });
    await sampler;
    const delivered = (id: string): boolean => receivers.some((r) => r.seen.has(id));
    await until(() => [...acked].every(delivered), 120_000);
    return {
      storage: o.storage,
      seconds: (Date.now() - started) / 1000,
      rate: o.rate,
      eventRetention: o.eventRetention,
      acknowledged: acked.size,
      lost: [...acked].filter((id) => !delivered(id)).length,
      publishP99Ms: quantile(latencies, 0.99),
      samples: samples.filter((s) => s.at - started >= o.durationMs / 5),
    };
  } finally {
    node.proc.kill('SIGTERM');
    await Promise.race([node.exited, new Promise((r) => setTimeout(r, 15_000))]);
    node.proc.kill('SIGKILL');
    await Promise.all(receivers.map((r) => r.close()));
    await storage.drop();
    rmSync(dir, { recursive: true, force: true });
  }
}

function range(values: number[], digits = 0): string {
  const finite = values.filter(Number.isFinite);
  if (finite.length === 0) return 'n/a';
  const first = finite[0] as number;
  const last = finite.at(-1) as number;
  return `first ${first.toFixed(digits)}, last ${last.toFixed(digits)}, max ${Math.max(...finite).toFixed(digits)}`;
}

export function formatSoak(r: SoakReport): string[] {
  return [
    `soak (${r.storage}): ${r.seconds.toFixed(0)} s at ${r.rate} publishes/s offered` +
      `${r.eventRetention ? `, --event-retention ${r.eventRetention}` : ''}; ` +
      `${r.acknowledged} acknowledged, lost ${r.lost}; publish p99 ${r.publishP99Ms.toFixed(0)} ms; ` +
      `load average ${loadavg()[0]?.toFixed(1)}`,
    `  after warm-up (${r.samples.length} samples, 10 s apart):`,
    `  RSS MB: ${range(r.samples.map((s) => s.rssMb))}`,
    `  open fds: ${range(r.samples.map((s) => s.openFds))}`,
    `  event-loop lag p99 ms: ${range(
      r.samples.map((s) => s.lagP99Ms),
      1,
    )}`,
    `  database MB: ${range(
      r.samples.map((s) => s.dbMb),
      1,
    )}`,
  ];
}
