/**
 * Load shedding (src/api/admission.ts; docs/reliability.md, "Overload"): a node offered more
 * publishes than it commits refuses the excess with 503 and Retry-After, stores nothing of what
 * it refused and delivers everything it accepted. Real server (the built `ferry start` as a
 * child process for the flood, so the clients do not share its event loop), real storage, a
 * real receiver.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { Agent, request } from 'undici';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/core/clock.js';
import { STORAGES, pgUrl, startFerry } from './helpers/ferry.js';
import { stretchByLoad } from './helpers/load.js';
import { startFerryProcess, type FerryProcess } from './helpers/process.js';
import { startReceiver, type Receiver } from './helpers/receiver.js';

const agent = new Agent({ connections: 256, pipelining: 1 });
afterAll(() => agent.destroy());

interface Answer {
  path: string;
  status: number;
  latencyMs: number;
  retryAfter?: string;
  error?: string;
}

/** A node's API: its URL and the account's token. */
interface Api {
  url: string;
  token: string;
}

async function publishTo(f: Api, destination: string): Promise<Answer> {
  const started = performance.now();
  const res = await request(`${f.url}/v2/publish/${destination}`, {
    method: 'POST',
    dispatcher: agent,
    headers: { authorization: `Bearer ${f.token}` },
    body: 'flood',
  });
  const text = await res.body.text();
  const retryAfter = res.headers['retry-after'];
  return {
    path: new URL(destination).pathname,
    status: res.statusCode,
    latencyMs: performance.now() - started,
    retryAfter: typeof retryAfter === 'string' ? retryAfter : undefined,
    error: res.statusCode === 200 ? undefined : (JSON.parse(text) as { error: string }).error,
  };
}

/** A counter's value on the node's `/metrics` (summed over the series that match `labels`). */
async function metric(f: Api, name: string, labels = ''): Promise<number> {
  const text = await (await fetch(`${f.url}/metrics`)).text();
  let sum = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith(`${name}{`) && line.includes(labels)) sum += Number(line.split(' ').at(-1));
  }
  return sum;
}

/** A histogram's cumulative buckets on the node's `/metrics`: [upper bound, count], ascending. */
async function histogram(
  f: Api,
  name: string,
): Promise<{ buckets: [number, number][]; count: number }> {
  const text = await (await fetch(`${f.url}/metrics`)).text();
  const buckets: [number, number][] = [];
  let count = 0;
  for (const line of text.split('\n')) {
    const bucket = new RegExp(`^${name}_bucket\\{le="([^"]+)"\\} (\\d+)$`).exec(line);
    if (bucket)
      buckets.push([bucket[1] === '+Inf' ? Infinity : Number(bucket[1]), Number(bucket[2])]);
    if (line.startsWith(`${name}_count `)) count = Number(line.split(' ')[1]);
  }
  return { buckets, count };
}

describe.each(STORAGES)('load shedding on %s', (storage) => {
  let ferry: FerryProcess | undefined;
  let receiver: Receiver | undefined;
  const dataDir = mkdtempSync(join(tmpdir(), 'ferry-overload-'));
  const schema = `ferry_test_${randomBytes(6).toString('hex')}`;
  afterEach(async () => {
    await ferry?.kill('SIGTERM');
    await receiver?.close();
    ferry = undefined;
    receiver = undefined;
    if (storage === 'postgres') {
      const sql = postgres(pgUrl as string, { onnotice: () => undefined, max: 1 });
      await sql.unsafe(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await sql.end();
    }
    rmSync(dataDir, { recursive: true, force: true });
  });

  it(
    'a flood: every answer is 200 and delivered, or 503 with Retry-After and never stored',
    { timeout: 180_000 },
    async () => {
      receiver = await startReceiver();
      const postgresArgs = [
        ...['--database-url', pgUrl as string, '--database-schema', schema],
        ...['--secret-key', randomBytes(32).toString('base64')],
      ];
      ferry = await startFerryProcess({
        dataDir,
        args: [
          ...['--publish-queue-limit', '10', '--publish-wait-limit', '1s'],
          ...(storage === 'postgres' ? postgresArgs : []),
        ],
      });
      const f: Api = { url: ferry.credentials.baseUrl, token: ferry.credentials.token };
      const total = 3_000;
      const answers: Answer[] = [];
      let next = 0;
      const client = async (): Promise<void> => {
        while (next < total) {
          const i = next++;
          answers.push(await publishTo(f, `${receiver?.url}/f${i}`));
        }
      };
      await Promise.all(Array.from({ length: 200 }, client));

      const accepted = answers.filter((a) => a.status === 200);
      const refused = answers.filter((a) => a.status === 503);
      // 429: the paid plan's max_requests_per_second on a fast machine, also refused unstored.
      const limited = answers.filter((a) => a.status === 429);
      expect(answers.filter((a) => ![200, 503, 429].includes(a.status))).toEqual([]);
      expect(accepted.length).toBeGreaterThan(0);
      expect(refused.length).toBeGreaterThan(0);
      for (const a of refused) {
        expect(a.retryAfter).toBe('1');
        expect(a.error).toMatch(/^Ferry is overloaded: .*nothing was stored, try again later$/);
      }
      // Ferry answered every accepted publish within about the wait limit (twice it, for the
      // answer's own commit), by its own clock: `ferry_publish_ack_seconds` runs from the
      // request's arrival to its answer. The clients see more: a request of the flood also
      // waits in the socket until Ferry reads it, which shedding does not bound (2.2 s was seen
      // here on a loaded machine), so their own view gets a looser bound.
      const ack = await histogram(f, 'ferry_publish_ack_seconds');
      const bound = stretchByLoad(2_000) / 1000;
      const within = ack.buckets.find(([le]) => le >= bound) ?? [Infinity, ack.count];
      const slowest = Math.max(...accepted.map((a) => a.latencyMs));
      console.log(
        `${storage}: ${accepted.length} accepted, ${refused.length} refused (503), ` +
          `${limited.length} limited (429); slowest accepted ${slowest.toFixed(0)} ms, ` +
          `${within[1]} of ${ack.count} answered within ${within[0]} s by Ferry's clock, ` +
          `load ${loadavg()[0]?.toFixed(1)}`,
      );
      expect(ack.count).toBe(accepted.length);
      expect(within[1]).toBe(ack.count);
      expect(slowest).toBeLessThan(stretchByLoad(5_000));

      // Everything accepted arrives; nothing refused was stored (the published count is the
      // accepted count) or arrives.
      await receiver.waitFor(accepted.length, 60_000);
      expect(new Set(receiver.requests.map((r) => r.path))).toEqual(
        new Set(accepted.map((a) => a.path)),
      );
      expect(await metric(f, 'ferry_messages_published_total', 'kind="publish"')).toBe(
        accepted.length,
      );
      expect(await metric(f, 'ferry_publishes_refused_total')).toBe(refused.length);
    },
  );
});

describe.runIf(pgUrl)('load shedding when PostgreSQL stalls', () => {
  it(
    'publishes are refused at once while the oldest waits past --publish-wait-limit; the waiting ones are delivered',
    { timeout: 60_000 },
    async () => {
      const clock = new ManualClock(Date.now());
      const receiver = await startReceiver();
      const f = await startFerry({
        storage: 'postgres',
        clock,
        args: ['--publish-wait-limit', '2s'],
      });
      const sql = postgres(pgUrl as string, { onnotice: () => undefined, max: 2 });
      try {
        // Another session holds the messages table: every insert waits for it.
        let release = (): void => undefined;
        const held = new Promise<void>((resolve) => (release = resolve));
        let locked = (): void => undefined;
        const lockTaken = new Promise<void>((resolve) => (locked = resolve));
        const holder = sql.begin(async (tx) => {
          await tx.unsafe(`LOCK TABLE ${f.schema}.messages IN EXCLUSIVE MODE`);
          locked();
          await held;
        });
        await lockTaken;
        const waiting = publishTo(f, `${receiver.url}/waiting`);
        // The publish is admitted and its insert waits on the lock (PostgreSQL says so).
        const deadline = Date.now() + 20_000;
        for (;;) {
          const [row] = await sql<{ n: number }[]>`
            SELECT count(*)::int AS n FROM pg_locks
            WHERE NOT granted AND relation = ${`${f.schema}.messages`}::regclass`;
          if ((row?.n ?? 0) > 0) break;
          if (Date.now() > deadline) throw new Error('the publish never waited on the lock');
          await new Promise((r) => setTimeout(r, 50));
        }
        clock.advance(2_000);
        const refused = await publishTo(f, `${receiver.url}/refused`);
        expect(refused.status).toBe(503);
        expect(refused.retryAfter).toBe('2');
        expect(refused.error).toMatch(/oldest publish has waited 2000 ms.*--publish-wait-limit/);
        expect(refused.latencyMs).toBeLessThan(stretchByLoad(1_000));

        release();
        await holder;
        expect((await waiting).status).toBe(200);
        const after = await publishTo(f, `${receiver.url}/after`);
        expect(after.status).toBe(200);
        await receiver.waitFor(2, 20_000);
        expect(receiver.requests.map((r) => r.path).sort()).toEqual(['/after', '/waiting']);
        expect(await metric(f, 'ferry_publishes_refused_total', 'reason="wait"')).toBe(1);
      } finally {
        await sql.end();
        await f.close();
        await receiver.close();
      }
    },
  );
});
