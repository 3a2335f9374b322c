/** What one request may create: --max-request-messages and --max-request-bytes (413, nothing stored). */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/core/clock.js';
import { STORAGES, startFerry, type TestFerry } from './helpers/ferry.js';

describe.each(STORAGES)('on %s', (storage) => {
  let t: TestFerry;

  beforeEach(async () => {
    t = await startFerry({
      clock: new ManualClock(Date.now()),
      engine: false,
      storage,
      args: ['--max-request-messages', '3', '--max-request-bytes', '1000'],
    });
    const endpoints = [1, 2, 3, 4].map((i) => ({ url: `http://127.0.0.1:9/e${i}` }));
    const res = await t.api('/v2/topics/four/endpoints', {
      method: 'POST',
      body: JSON.stringify({ endpoints }),
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(200);
  });
  afterEach(async () => t.close());

  const events = async (): Promise<unknown[]> =>
    ((await (await t.api('/v2/events')).json()) as { events: unknown[] }).events;

  it('refuses a fan-out beyond --max-request-messages with 413 and stores nothing', async () => {
    const res = await t.api('/v2/publish/four', { method: 'POST', body: 'x' });
    expect(res.status).toBe(413);
    expect(((await res.json()) as { error: string }).error).toContain('--max-request-messages');
    // A batch counts every entry's fan-out together.
    const batch = await t.api('/v2/batch', {
      method: 'POST',
      body: JSON.stringify([
        { destination: 'http://127.0.0.1:9/a' },
        { destination: 'http://127.0.0.1:9/b' },
        { destination: 'http://127.0.0.1:9/c' },
        { destination: 'http://127.0.0.1:9/d' },
      ]),
    });
    expect(batch.status).toBe(413);
    expect(await events()).toEqual([]);
    const within = await t.api('/v2/publish/http://127.0.0.1:9/one', { method: 'POST', body: 'x' });
    expect(within.status).toBe(200);
  });

  it('refuses bodies beyond --max-request-bytes, counted per message', async () => {
    const body = 'b'.repeat(300); // 3 × 300 = 900 bytes pass; 3 × 340 = 1,020 do not
    const batch = await t.api('/v2/batch', {
      method: 'POST',
      body: JSON.stringify(
        ['a', 'b', 'c'].map((p) => ({ destination: `http://127.0.0.1:9/${p}`, body })),
      ),
    });
    expect(batch.status).toBe(200); // 900 bytes
    const over = await t.api('/v2/batch', {
      method: 'POST',
      body: JSON.stringify(
        ['a', 'b', 'c'].map((p) => ({
          destination: `http://127.0.0.1:9/${p}`,
          body: `${body}${'x'.repeat(40)}`,
        })),
      ),
    });
    expect(over.status).toBe(413);
    expect(((await over.json()) as { error: string }).error).toContain('--max-request-bytes');
    expect(await events()).toHaveLength(3);
  });
});
