/**
 * Lists answer within a byte budget (about 4 MiB of JSON per page: the page ends early and its
 * cursor continues) and cut long bodies (`bodyTruncated`, `bodySize`, `bodyCut`); the single
 * item's GET serves the whole body. A scaled-down version of the measurement in
 * scripts/measure-lists.mjs (docs/limits.md, "Limits per request").
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/core/clock.js';
import { newDlqId, newMessageId } from '../src/core/ids.js';
import type { DlqEntry, Message } from '../src/core/types.js';
import { eventOf } from '../src/engine/records.js';
import { STORAGES, startFerry, type TestFerry } from './helpers/ferry.js';
import { stretchByLoad } from './helpers/load.js';

type Json = Record<string, unknown>;
const MiB = 1024 * 1024;

/**
 * Longest wait for /health while lists are read: the goal (100 ms, docs/security.md) times the
 * machine's load per core, since on a loaded machine every answer also waits for a CPU.
 */
function healthBoundMs(): number {
  return stretchByLoad(100);
}

describe.each(STORAGES)('on %s', (storage) => {
  let t: TestFerry;
  let clock: ManualClock;

  beforeEach(async () => {
    clock = new ManualClock(Date.now());
    t = await startFerry({ clock, engine: false, storage });
  });
  afterEach(async () => t.close());

  /** `n` failed messages of `size` bytes each (text), stored as DLQ entries and CREATED events. */
  async function storeFailed(n: number, size: number): Promise<Message[]> {
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
        // "é" (2 bytes) after an odd prefix: every even cut falls inside a character.
        body: Buffer.from(`x${'é'.repeat(size / 2)}`.slice(0, size / 2 + 1), 'utf8'),
      });
    }
    const entries: DlqEntry[] = messages.map((message) => ({
      dlqId: newDlqId(message.createdAt),
      message,
      createdAt: message.createdAt,
      expiresAt: message.createdAt + 86_400_000,
    }));
    const ex = t.ferry.driver.executor;
    await ex.eventInsertMany({ events: messages.map((m) => eventOf(m, 'CREATED', m.createdAt)) });
    await ex.dlqInsertMany({ entries });
    return messages;
  }

  async function pages(path: string, key: string): Promise<{ sizes: number[]; items: Json[] }> {
    const sizes: number[] = [];
    const items: Json[] = [];
    let cursor = '';
    do {
      const sep = path.includes('?') ? '&' : '?';
      const res = await t.api(cursor === '' ? path : `${path}${sep}cursor=${cursor}`);
      expect(res.status).toBe(200);
      const text = await res.text();
      sizes.push(Buffer.byteLength(text));
      const page = JSON.parse(text) as Json;
      items.push(...(page[key] as Json[]));
      cursor = (page.cursor as string | undefined) ?? '';
    } while (cursor !== '');
    return { sizes, items };
  }

  it('cuts bodies in lists by default, says so, and serves the whole body from the GET', async () => {
    const [message] = await storeFailed(1, 200_001);
    const dlq = (await (await t.api('/v2/dlq')).json()) as { messages: Json[] };
    const entry = dlq.messages[0] as Json;
    expect(entry.bodyTruncated).toBe(true);
    expect(entry.bodySize).toBe(message?.body.byteLength);
    // Cut within the default 64 KiB, at a character boundary: still text.
    expect(typeof entry.body).toBe('string');
    expect(Buffer.byteLength(entry.body as string)).toBeLessThanOrEqual(64 * 1024);
    expect(message?.body.toString()).toContain(entry.body as string);

    const whole = (await (await t.api(`/v2/dlq/${entry.dlqId as string}`)).json()) as Json;
    expect(whole.body).toBe(Buffer.from(message?.body ?? []).toString());
    expect(whole.bodyTruncated).toBeUndefined();

    const events = (await (await t.api('/v2/events?bodyCut=10')).json()) as { events: Json[] };
    const created = events.events[0] as Json;
    expect(created).toMatchObject({ bodyTruncated: true, bodySize: message?.body.byteLength });
    expect(Buffer.from(created.body as string, 'base64')).toEqual(message?.body.subarray(0, 10));

    // A body within the cut shows no cut fields.
    const small = (await (await t.api(`/v2/events?bodyCut=${MiB}`)).json()) as { events: Json[] };
    expect(small.events[0]?.bodyTruncated).toBeUndefined();

    for (const bad of ['-1', 'x', String(4 * MiB + 1)]) {
      const res = await t.api(`/v2/dlq?bodyCut=${bad}`);
      expect(res.status).toBe(400);
      expect(((await res.json()) as Json).error).toContain('bodyCut');
    }
  });

  it('ends a page at the byte budget; the cursor continues until every item was listed', async () => {
    // 6 bodies of 1 MiB, listed whole: 6 to 8.4 MiB of JSON, which no page may hold at once.
    const stored = await storeFailed(6, MiB);
    for (const [path, key] of [
      [`/v2/dlq?count=100&bodyCut=${MiB}`, 'messages'],
      [`/v2/events?count=1000&bodyCut=${MiB}`, 'events'],
    ] as const) {
      const { sizes, items } = await pages(path, key);
      expect(items).toHaveLength(stored.length);
      expect(new Set(items.map((i) => i.messageId)).size).toBe(stored.length);
      expect(sizes.length).toBeGreaterThanOrEqual(2);
      for (const size of sizes) expect(size).toBeLessThanOrEqual(4 * MiB + 64 * 1024);
    }
  });

  it('answers /health while pages of large bodies are read, one after the other', async () => {
    // Pages of ~60 text bodies cut to 64 KiB (4 MiB of JSON each): the page is read, presented and
    // serialised a few rows at a time, in turns of the event loop of their own.
    const n = 90;
    const stored = await storeFailed(n, storage === 'sqlite' ? MiB : MiB / 4);
    const waits: number[] = [];
    let listing = true;
    const poller = (async () => {
      while (listing) {
        const t0 = performance.now();
        await (await fetch(`${t.url}/health`)).text();
        waits.push(performance.now() - t0);
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    })();
    try {
      for (const [path, key] of [
        ['/v2/events?count=1000', 'events'],
        ['/v2/dlq?count=100', 'messages'],
      ] as const) {
        const { sizes, items } = await pages(path, key);
        expect(items).toHaveLength(stored.length);
        expect(sizes.length).toBeGreaterThanOrEqual(2);
      }
    } finally {
      listing = false;
      await poller;
    }
    expect(waits.length).toBeGreaterThan(4);
    // One slow answer is the machine's (idle, /health alone takes up to 24-200 ms here now and
    // then: docs/security.md); a page served in one turn would stall /health once per page, and
    // there are at least four pages.
    const [, secondLongest = 0] = waits.sort((a, b) => b - a);
    expect(secondLongest).toBeLessThan(healthBoundMs());
  });
});
