/**
 * A batch of 1,000 entries is validated a hundred entries per turn of the event loop
 * (api/routes/batch.ts), so other requests are served in between: validating them all in one
 * turn held the event loop for 10–40 ms on this machine (docs/reliability.md, section 4).
 * Ferry runs in this process, so the test sees its event loop: a 1 ms timer's late firings.
 */
import { cpus, loadavg } from 'node:os';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { STORAGES, startFerry, type TestFerry } from './helpers/ferry.js';

const ENTRIES = 1_000;

describe.each(STORAGES)('a batch of %i entries (%s)', (storage) => {
  let t: TestFerry;
  beforeEach(async () => {
    t = await startFerry({ storage, engine: false });
  });
  afterEach(async () => t.close());

  /** The longest gap between two firings of a 1 ms timer while `work` runs, ms. */
  async function longestTurn(work: () => Promise<unknown>): Promise<number> {
    let last = performance.now();
    let longest = 0;
    const timer = setInterval(() => {
      const now = performance.now();
      longest = Math.max(longest, now - last);
      last = now;
    }, 1);
    try {
      await work();
    } finally {
      clearInterval(timer);
    }
    return longest;
  }

  it('is validated in turns short enough to serve other requests', async () => {
    const batch = (): Promise<Response> =>
      t.api('/v2/batch', {
        method: 'POST',
        body: JSON.stringify(
          Array.from({ length: ENTRIES }, (_, i) => ({
            destination: `https://example.com/b/${i}`,
            body: `entry ${i}`,
            // The settings a real publisher sends; each is parsed and checked per entry.
            headers: {
              'Svc-Delay': '1d',
              'Svc-Retries': '2',
              'Svc-Retry-Delay': `pow(2, retried) * ${1000 + i}`,
              'Svc-Callback': `https://example.com/callback/${i}`,
              'Svc-Failure-Callback': `https://example.com/failed/${i}`,
              'Svc-Label': `batch-${i % 10}`,
              'Svc-Forward-X-Request-Id': `request-${i}`,
              'Svc-Forward-X-Tenant': 'tenant-a',
              'Content-Type': 'application/json',
            },
          })),
        ),
      });
    expect((await batch()).status).toBe(200); // warm-up: compiled code, prepared statements
    const turns: number[] = [];
    for (let round = 0; round < 3; round++) {
      turns.push(
        await longestTurn(async () => {
          const res = await batch();
          expect(res.status).toBe(200);
          expect(((await res.json()) as unknown[]).length).toBe(ENTRIES);
        }),
      );
    }
    // The shortest of three rounds: a round's longest turn may also hold a garbage collection or
    // a storage commit; the validation's turn is in every round. Quiet, the shortest is 10-11 ms
    // (25-49 ms with the whole batch validated in one turn); on a loaded machine every turn also
    // waits for a CPU, hence the bound times the load per core.
    expect(Math.min(...turns)).toBeLessThan(25 * Math.max(1, (loadavg()[0] ?? 0) / cpus().length));
  });

  it('still fails as a whole, naming the first invalid entry, when it is in a later turn', async () => {
    const entries = Array.from({ length: ENTRIES }, (_, i) => ({
      destination: i === 750 || i === 900 ? 'not a url' : `https://example.com/b/${i}`,
      body: `entry ${i}`,
    }));
    const res = await t.api('/v2/batch', { method: 'POST', body: JSON.stringify(entries) });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toMatch(/^entry 750: /);
    const listed = (await (await t.api('/v2/messages')).json()) as { messages: unknown[] };
    expect(listed.messages).toEqual([]);
  });
});
