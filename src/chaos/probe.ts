/**
 * What the chaos cases measure of a running node: its process's RSS, open file descriptors and
 * event-loop lag (prom-client's default metrics on the node's `/metrics`), and its database size.
 */
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import postgres from 'postgres';
import { request } from 'undici';
import { loadAgent } from './harness.js';

export interface Sample {
  at: number;
  rssMb: number;
  openFds: number;
  /** Event-loop lag p99 over the last scrape interval, ms. */
  lagP99Ms: number;
  dbMb: number;
}

function metric(text: string, name: string): number {
  const match = new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.eE+-]+)$`, 'm').exec(text);
  return match ? Number(match[1]) : Number.NaN;
}

export async function sample(p: {
  baseUrl: string;
  dataDir: string;
  /** PostgreSQL's server and the node's schema; absent: SQLite in `dataDir`. */
  postgres?: { url: string; schema: string };
}): Promise<Sample> {
  const res = await request(`${p.baseUrl}/metrics`, { dispatcher: loadAgent });
  const text = await res.body.text();
  return {
    at: Date.now(),
    rssMb: metric(text, 'process_resident_memory_bytes') / 2 ** 20,
    openFds: metric(text, 'process_open_fds'),
    lagP99Ms: metric(text, 'nodejs_eventloop_lag_p99_seconds') * 1000,
    dbMb: await databaseMb(p),
  };
}

async function databaseMb(p: { dataDir: string; postgres?: { url: string; schema: string } }) {
  if (p.postgres) {
    const sql = postgres(p.postgres.url, { onnotice: () => undefined, max: 1 });
    try {
      const [row] = await sql<{ bytes: string }[]>`
        SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::text AS bytes
        FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = ${p.postgres.schema} AND c.relkind = 'r'`;
      return Number(row?.bytes ?? 0) / 2 ** 20;
    } finally {
      await sql.end();
    }
  }
  let bytes = 0;
  for (const name of readdirSync(p.dataDir)) {
    if (name.includes('.db') || name.endsWith('.sqlite') || name.includes('-wal')) {
      bytes += statSync(join(p.dataDir, name)).size;
    }
  }
  return bytes / 2 ** 20;
}
