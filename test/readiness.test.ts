/**
 * `GET /ready` as a load balancer or orchestrator probes it: 200 while storage answers with every
 * migration applied; 503 with the reason when PostgreSQL is unreachable (its connections go
 * through a TCP proxy the test shuts) or the schema is gone, and while the node shuts down.
 * `/health` stays a liveness check.
 */
import { createServer, connect, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import postgres from 'postgres';
import { randomBytes } from 'node:crypto';
import { openPostgresDriver } from '../src/storage/postgres/postgres-driver.js';
import { pgUrl, startFerry, type TestFerry } from './helpers/ferry.js';
import { startReceiver } from './helpers/receiver.js';

async function ready(url: string): Promise<{ status: number; body: unknown }> {
  const res = await fetch(`${url}/ready`);
  return { status: res.status, body: await res.json() };
}

/** A TCP proxy to `target` that can be shut, cutting every connection through it. */
async function startProxy(target: URL): Promise<{ port: number; shut(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = connect(Number(target.port || 5432), target.hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => s.destroy());
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    shut: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      }),
  };
}

describe('/ready', () => {
  let t: TestFerry | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it('answers 200 when storage answers and every migration is applied; /health stays liveness', async () => {
    t = await startFerry();
    expect(await ready(t.url)).toEqual({ status: 200, body: { status: 'ready' } });
    expect((await fetch(`${t.url}/health`)).status).toBe(200);
  });

  it('answers 503 while the node shuts down, until its last port closes', async () => {
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    const dest = await startReceiver(async () => {
      await held;
      return { status: 200 };
    });
    try {
      t = await startFerry({ args: ['--metrics-port', '0'] });
      const res = await t.api(`/v2/publish/${dest.url}/slow`, { method: 'POST', body: 'x' });
      expect(res.status).toBe(200);
      await dest.waitFor(1);
      expect((await ready(t.ferry.metricsUrl)).status).toBe(200);
      // The engine waits for the delivery in flight; meanwhile the node is not ready.
      const stopping = t.ferry.stop();
      expect(await ready(t.ferry.metricsUrl)).toEqual({
        status: 503,
        body: { status: 'unavailable', error: 'shutting down' },
      });
      release();
      await stopping;
    } finally {
      release();
      await dest.close();
    }
  });

  describe.skipIf(!pgUrl)('on PostgreSQL', () => {
    it('answers 503 when PostgreSQL is unreachable', async () => {
      const target = new URL(pgUrl ?? '');
      const proxy = await startProxy(target);
      const url = new URL(pgUrl ?? '');
      url.hostname = '127.0.0.1';
      url.port = String(proxy.port);
      const schema = `ferry_test_${randomBytes(6).toString('hex')}`;
      const driver = openPostgresDriver({ url: url.toString(), schema });
      const cleanup = postgres(pgUrl ?? '', { onnotice: () => undefined });
      try {
        t = await startFerry({ driver, engine: false });
        expect((await ready(t.url)).status).toBe(200);
        await proxy.shut();
        expect(await ready(t.url)).toEqual({
          status: 503,
          body: { status: 'unavailable', error: 'storage does not answer (ECONNREFUSED)' },
        });
        expect((await fetch(`${t.url}/health`)).status).toBe(200);
      } finally {
        await proxy.shut();
        await cleanup.unsafe(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
        await cleanup.end();
      }
    });

    it('answers 503 naming the pending migrations when the schema is gone', async () => {
      t = await startFerry({ storage: 'postgres', engine: false });
      expect((await ready(t.url)).status).toBe(200);
      const sql = postgres(pgUrl ?? '', { onnotice: () => undefined });
      try {
        await sql.unsafe(`DROP SCHEMA ${t.schema ?? ''} CASCADE`);
      } finally {
        await sql.end();
      }
      const latest = (await t.ferry.driver.migrationStatus()).latest;
      const versions = Array.from({ length: latest }, (_, i) => i + 1);
      expect(await ready(t.url)).toEqual({
        status: 503,
        body: {
          status: 'unavailable',
          error: `migrations not applied: ${latest} of ${latest} pending (versions ${versions.join(', ')})`,
        },
      });
    });
  });
});
