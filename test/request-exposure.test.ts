/**
 * Issue 21.3 over real HTTP: a 500's log line never carries the token from the query, and the
 * management API's 64 KiB body limit holds on the main port as on `--mgmt-port`.
 */
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { STORAGES, startFerry, type TestFerry } from './helpers/ferry.js';
import { createMgmtUser } from './helpers/mgmt.js';

/** A real pino logger whose JSON lines are kept in `lines`. */
function capturingLogger(): { logger: pino.Logger; lines: string[] } {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(chunk.toString());
      done();
    },
  });
  return { logger: pino({ level: 'info', base: undefined }, stream), lines };
}

describe.each(STORAGES)('on %s', (storage) => {
  let t: TestFerry | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it('a failed request is logged with its route pattern, never the token or a forwarded Authorization', async () => {
    const { logger, lines } = capturingLogger();
    t = await startFerry({ storage, engine: false, logger });
    // A real failure: storage closed under the running server, so authentication cannot read.
    await t.ferry.driver.close();
    const res = await fetch(
      `${t.url}/v2/events?count=5&queue_token=${encodeURIComponent(t.token)}` +
        '&svc-forward-authorization=Bearer%20dest-secret',
    );
    // PostgreSQL's closed connection reads as storage unavailable (503, logged as a warning);
    // SQLite's closed database as an internal error (500). Both log the route, never the URL.
    expect([500, 503]).toContain(res.status);
    const logged = lines.join('');
    expect(logged).toContain(res.status === 503 ? 'storage unavailable' : 'request failed');
    expect(logged).toContain('"route":"/v2/events"');
    expect(logged).not.toContain(t.token);
    expect(logged).not.toContain(encodeURIComponent(t.token));
    expect(logged).not.toContain('dest-secret');
  });

  for (const separatePort of [false, true]) {
    it(`the management API refuses a body over 64 KiB with 413 (${separatePort ? '--mgmt-port' : 'main port'})`, async () => {
      t = await startFerry({
        storage,
        engine: false,
        args: separatePort ? ['--mgmt-port', '0'] : [],
      });
      const admin = await createMgmtUser(t, true);
      const big = JSON.stringify({ region: 'us-east-1', pad: 'x'.repeat(64 * 1024) });
      const res = await admin.api('/v2/queue', { method: 'POST', body: big });
      expect(res.status).toBe(413);
      expect(((await res.json()) as { error: string }).error).toMatch(/65536 bytes/);
      // A body within the limit is read (and its unknown field named).
      const small = await admin.api('/v2/queue', { method: 'POST', body: '{"pad":"x"}' });
      expect(small.status).toBe(400);
      // Publishes on the main port keep the plan's limit, far above 64 KiB.
      const publish = await t.api('/v2/publish/https://example.com/x', {
        method: 'POST',
        headers: { 'Svc-Delay': '1h' },
        body: 'x'.repeat(1024 * 1024),
      });
      expect(publish.status).toBe(200);
    });
  }
});
