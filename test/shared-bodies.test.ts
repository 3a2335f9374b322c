/**
 * Bodies stored once (issue 21, points 1 and 2; migration 011), end to end on each storage: a
 * fan-out stores its body once, a large fan-out is accepted while /health keeps answering, and
 * lists of large bodies read only their heads. Scaled-down versions of
 * scripts/measure-fanout.mjs and scripts/measure-lists.mjs (docs/security.md).
 */
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/core/clock.js';
import { newDlqId, newMessageId } from '../src/core/ids.js';
import type { DlqEntry, Message } from '../src/core/types.js';
import { eventOf } from '../src/engine/records.js';
import { pgUrl, STORAGES, startFerry, type TestFerry } from './helpers/ferry.js';

const MiB = 1024 * 1024;

describe.each(STORAGES)('on %s', (storage) => {
  let t: TestFerry;
  let clock: ManualClock;

  beforeEach(async () => {
    clock = new ManualClock(Date.now());
    t = await startFerry({ clock, engine: false, storage, plan: 'paid' });
  });
  afterEach(async () => t.close());

  /** Bytes the storage holds: the SQLite file and its WAL, or the schema's relations. */
  async function storedBytes(): Promise<number> {
    if (storage === 'sqlite') {
      const file = (name: string): number => {
        try {
          return statSync(join(t.config.dataDir, name)).size;
        } catch {
          return 0;
        }
      };
      return file('ferry.db') + file('ferry.db-wal');
    }
    const { default: postgres } = await import('postgres');
    const sql = postgres(pgUrl ?? '', { onnotice: () => undefined });
    try {
      const [row] = await sql<{ n: string }[]>`
        SELECT COALESCE(sum(pg_total_relation_size(c.oid)), 0) AS n
        FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = ${t.schema ?? ''} AND c.relkind = 'r'`;
      return Number(row?.n ?? 0);
    } finally {
      await sql.end();
    }
  }

  async function makeGroup(name: string, endpoints: number): Promise<void> {
    for (let i = 0; i < endpoints; i += 100) {
      const res = await t.api(`/v2/topics/${name}/endpoints`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          endpoints: Array.from({ length: Math.min(100, endpoints - i) }, (_, j) => ({
            url: `http://127.0.0.1:9/endpoint-${i + j}`,
          })),
        }),
      });
      expect(res.status).toBe(200);
    }
  }

  it('a 1 MiB publish to a group of 200 endpoints stores the body once', async () => {
    await makeGroup('wide', 200);
    const body = Buffer.alloc(MiB, 'a');
    body.write('first bytes', 0);
    body.write('last bytes', MiB - 10);
    const before = await storedBytes();
    const usage = await t.ferry.driver.executor.bodyUsage();
    const res = await t.api('/v2/publish/wide', { method: 'POST', body });
    expect(res.status).toBe(200);
    const results = (await res.json()) as { messageId: string }[];
    expect(results).toHaveLength(200);
    const after = await t.ferry.driver.executor.bodyUsage();
    expect(after.count - usage.count).toBe(1);
    expect(after.bytes - usage.bytes).toBe(MiB);
    // Stored 400 times before (each message and its CREATED event): ≥ 400 MiB.
    expect((await storedBytes()) - before).toBeLessThan(16 * MiB);

    // Every fan-out message still has the whole body, byte for byte.
    for (const result of [results[0], results[199]]) {
      const got = await t.api(`/v2/messages/${result?.messageId ?? ''}`);
      expect(got.status).toBe(200);
      const message = (await got.json()) as { body: string };
      expect(message.body).toBe(body.toString('utf8'));
    }
  });

  it('accepts a 1 MiB publish to 1,000 endpoints while /health keeps answering', async () => {
    await makeGroup('huge', 1_000);
    const body = Buffer.alloc(MiB, 'b');
    const waits: number[] = [];
    let polling = true;
    const poller = (async () => {
      while (polling) {
        const t0 = performance.now();
        const res = await fetch(`${t.url}/health`);
        await res.text();
        waits.push(performance.now() - t0);
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    })();
    const res = await t.api('/v2/publish/huge', { method: 'POST', body });
    polling = false;
    await poller;
    expect(res.status).toBe(200);
    expect(((await res.json()) as unknown[]).length).toBe(1_000);
    expect(waits.length).toBeGreaterThan(0);
    // Goal: p99 under 100 ms on an idle machine (docs/security.md has the figures). Bounded
    // generously here for a shared, loaded machine; one transaction writing 1,000 copies of the
    // body held the event loop for seconds (3.7 s for 200 endpoints in the issue).
    expect(Math.max(...waits)).toBeLessThan(1_000);
  });

  it('lists large bodies from their heads: one page holds them all, quickly', async () => {
    const n = 12;
    // Smaller on PostgreSQL, where seeding travels hex-encoded over the connection (and a cut
    // was already a slice there: substring() of an out-of-line bytea).
    const size = storage === 'sqlite' ? 8 * MiB : 2 * MiB;
    const messages: Message[] = [];
    for (let i = 0; i < n; i++) {
      const now = clock.now() + i;
      messages.push({
        id: newMessageId(now),
        accountId: t.account.id,
        url: 'https://example.com/hook',
        callerIp: '127.0.0.1',
        retried: 0,
        maxRetries: 0,
        notBefore: now,
        createdAt: now,
        dueAt: now,
        spec: { method: 'POST', headers: {} },
        body: Buffer.alloc(size, 'c'),
      });
    }
    const entries: DlqEntry[] = messages.map((message) => ({
      dlqId: newDlqId(message.createdAt),
      message,
      createdAt: message.createdAt,
      expiresAt: message.createdAt + 86_400_000,
    }));
    const ex = t.ferry.driver.executor;
    for (const m of messages) {
      await ex.transaction(async (tx) => {
        await tx.eventInsertMany({ events: [eventOf(m, 'CREATED', m.createdAt)] });
        await tx.dlqInsertMany({ entries: entries.filter((e) => e.message === m) });
      });
    }
    for (const [path, key] of [
      ['/v2/events?count=100', 'events'],
      ['/v2/dlq?count=100', 'messages'],
    ] as const) {
      const t0 = performance.now();
      const res = await t.api(path);
      const ms = performance.now() - t0;
      expect(res.status).toBe(200);
      const page = (await res.json()) as Record<string, Record<string, unknown>[]>;
      // A page ends early after ~500 ms of reading: on SQLite, reading 12 whole 8 MiB bodies to
      // cut them took that long; reading their 64 KiB heads does not.
      expect(page[key]).toHaveLength(n);
      expect(page.cursor).toBeUndefined();
      expect(page[key]?.[0]?.bodyTruncated).toBe(true);
      expect(page[key]?.[0]?.bodySize).toBe(size);
      expect(ms).toBeLessThan(1_000);
    }
  });
});
