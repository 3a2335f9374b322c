/**
 * The PostgreSQL driver's deadline (storage-deadline.ts) against a real server, reached through
 * a TCP proxy the test can freeze (bytes held both ways, connections left open: a network
 * partition or a frozen host). A transaction the server does not answer in time is reported
 * "not applied" and then really never commits once the server answers again; a COMMIT sent
 * into the freeze is reported "unknown" (and does apply afterwards); a read is "not applied", a
 * single write "unknown". Needs `TEST_DATABASE_URL`.
 */
import { randomBytes } from 'node:crypto';
import { createServer, connect, type Server, type Socket } from 'node:net';
import postgres from 'postgres';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { makeAccount, makeMessage } from '../conformance/fixtures.js';
import type { Driver } from '../driver.js';
import { StorageNoAnswerError } from '../storage-deadline.js';
import { openPostgresDriver } from './postgres-driver.js';
import { quoteIdentifier } from './postgres-migrate.js';

const url = process.env.TEST_DATABASE_URL;
if (!url) console.log('postgres-deadline.test.ts: TEST_DATABASE_URL is not set; skipped');

/** The driver's deadline in these tests, ms. */
const TIMEOUT_MS = 400;

/** A TCP proxy to the database whose traffic the test can hold (freeze) and release (thaw). */
interface FreezableProxy {
  port: number;
  /** The local ports of the proxy's connections to the server (`client_port` there). */
  upstreamPorts(): number[];
  freeze(): void;
  thaw(): void;
  close(): Promise<void>;
}

async function startProxy(target: URL): Promise<FreezableProxy> {
  let frozen = false;
  const held: (() => void)[] = [];
  const sockets = new Set<Socket>();
  const upstreams = new Set<Socket>();
  const forward = (from: Socket, to: Socket): void => {
    from.on('data', (chunk: Buffer) => {
      if (frozen) held.push(() => to.write(chunk));
      else to.write(chunk);
    });
  };
  const server: Server = createServer((client) => {
    const upstream = connect(Number(target.port || 5432), target.hostname);
    upstreams.add(upstream);
    upstream.on('close', () => upstreams.delete(upstream));
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => undefined);
      s.on('close', () => {
        client.destroy();
        upstream.destroy();
        sockets.delete(s);
      });
    }
    forward(client, upstream);
    forward(upstream, client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    upstreamPorts: () => [...upstreams].flatMap((s) => (s.localPort ? [s.localPort] : [])),
    freeze: () => void (frozen = true),
    thaw() {
      frozen = false;
      for (const release of held.splice(0)) release();
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

describe.skipIf(!url)('PostgreSQL driver deadline', () => {
  const schema = `ferry_test_${randomBytes(6).toString('hex')}`;
  const account = makeAccount();
  let proxy: FreezableProxy;
  let driver: Driver;
  let admin: postgres.Sql;

  beforeAll(async () => {
    const direct = new URL(url ?? '');
    proxy = await startProxy(direct);
    const proxied = new URL(direct.href);
    proxied.hostname = '127.0.0.1';
    proxied.port = String(proxy.port);
    driver = openPostgresDriver({ url: proxied.href, schema, timeoutMs: TIMEOUT_MS });
    await driver.migrate();
    await driver.executor.accountInsert({ account });
    admin = postgres(url ?? '', {
      max: 2,
      onnotice: () => {},
      connection: { search_path: quoteIdentifier(schema) },
    });
  });
  afterEach(() => proxy.thaw());
  afterAll(async () => {
    await driver.close();
    await proxy.close();
    await admin.unsafe(`DROP SCHEMA IF EXISTS ${quoteIdentifier(schema)} CASCADE`);
    await admin.end({ timeout: 5 });
  });

  /** The rejection of `work` (fails the test if it resolves). */
  const rejectionOf = (work: Promise<unknown>): Promise<unknown> =>
    work.then(
      () => {
        throw new Error('expected the operation to fail');
      },
      (error: unknown) => error,
    );

  /** Resolves once `done()` is true, polling the database (a round trip per check). */
  async function until(done: () => boolean | Promise<boolean>): Promise<void> {
    const deadline = Date.now() + 10_000;
    while (!(await done()) && Date.now() < deadline) await admin`SELECT pg_sleep(0.02)`;
    expect(await done()).toBe(true);
  }

  /**
   * Resolves once the server has finished everything the driver sent it: each of the driver's
   * connections is `idle` (not in a transaction, not running a statement). A later statement on
   * the pool may take another connection, so its answer says nothing about the held one.
   */
  async function serverDone(): Promise<void> {
    await until(async () => {
      const [row] = await admin<{ n: number }[]>`
        SELECT count(*)::int AS n FROM pg_stat_activity
        WHERE client_port = ANY(${proxy.upstreamPorts()}::int[]) AND state <> 'idle'`;
      return row?.n === 0;
    });
  }

  const stored = async (id: string): Promise<boolean> =>
    (await admin`SELECT id FROM messages WHERE id = ${id}`).length === 1;

  it('a transaction past the deadline is "not applied" and never commits, even once the server answers', async () => {
    const message = makeMessage(account.id, { id: 'msg_deadline_no' });
    let inserted = false;
    const started = Date.now();
    const error = await rejectionOf(
      driver.executor.transaction(async (tx) => {
        proxy.freeze(); // BEGIN was answered; the INSERT goes out into the freeze
        await tx.messageInsertMany({ messages: [message] });
        inserted = true;
      }),
    );
    const waited = Date.now() - started;
    expect(error).toBeInstanceOf(StorageNoAnswerError);
    expect(error).toMatchObject({ applied: 'no', code: 'STORAGE_NO_ANSWER' });
    expect(waited).toBeGreaterThanOrEqual(TIMEOUT_MS - 5);
    // The server answers again: the INSERT completes, and the transaction must roll back.
    proxy.thaw();
    await until(() => inserted);
    await serverDone(); // the transaction's end (ROLLBACK, or COMMIT were it wrong) is through
    expect(await stored(message.id)).toBe(false);
    // Storage works again: the same insert commits.
    await driver.executor.transaction((tx) => tx.messageInsertMany({ messages: [message] }));
    expect(await stored(message.id)).toBe(true);
  });

  it('a COMMIT sent and not answered is "unknown" (and may well apply)', async () => {
    const message = makeMessage(account.id, { id: 'msg_deadline_unknown' });
    const error = await rejectionOf(
      driver.executor.transaction(async (tx) => {
        await tx.messageInsertMany({ messages: [message] });
        proxy.freeze(); // the COMMIT goes out into the freeze
      }),
    );
    expect(error).toMatchObject({ applied: 'unknown', code: 'STORAGE_NO_ANSWER' });
    proxy.thaw();
    await serverDone();
    expect(await stored(message.id)).toBe(true);
  });

  it('a read past the deadline is "not applied"; a write outside a transaction is "unknown"', async () => {
    proxy.freeze();
    const read = driver.executor.messageGet({ accountId: account.id, id: 'msg_x' });
    const write = driver.executor.messageDeleteMany({
      accountId: account.id,
      filter: { messageIds: ['msg_x'] },
    });
    expect(await rejectionOf(read)).toMatchObject({ applied: 'no' });
    expect(await rejectionOf(write)).toMatchObject({ applied: 'unknown' });
  });
});
