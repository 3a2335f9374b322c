/**
 * The PostgreSQL driver's deadline (storage-deadline.ts) against a real server: a transaction the
 * server does not answer in time is reported "not applied" and then really never commits, even
 * when the server answers later; a read past the deadline is "not applied"; a write outside a
 * transaction is "unknown". The server is kept from answering by a lock another connection holds
 * (the statement waits on it), which is released after the deadline has passed.
 * Needs `TEST_DATABASE_URL`.
 */
import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { T0, makeAccount, makeMessage } from '../conformance/fixtures.js';
import type { Driver } from '../driver.js';
import { StorageNoAnswerError } from '../storage-deadline.js';
import { openPostgresDriver } from './postgres-driver.js';
import { quoteIdentifier } from './postgres-migrate.js';

const url = process.env.TEST_DATABASE_URL;
if (!url) console.log('postgres-deadline.test.ts: TEST_DATABASE_URL is not set; skipped');

describe.skipIf(!url)('PostgreSQL driver deadline', () => {
  const schema = `ferry_test_${randomBytes(6).toString('hex')}`;
  const account = makeAccount();
  let driver: Driver;
  let admin: postgres.Sql;

  beforeAll(async () => {
    driver = openPostgresDriver({ url: url ?? '', schema, timeoutMs: 300 });
    await driver.migrate();
    await driver.executor.accountInsert({ account });
    admin = postgres(url ?? '', {
      max: 2,
      onnotice: () => {},
      connection: { search_path: quoteIdentifier(schema) },
    });
  });
  afterAll(async () => {
    await driver.close();
    await admin.unsafe(`DROP SCHEMA IF EXISTS ${quoteIdentifier(schema)} CASCADE`);
    await admin.end({ timeout: 5 });
  });

  /**
   * Runs `during` while another connection holds an exclusive lock on `table`, so that every
   * statement of the driver touching it waits; `during`'s promise settles (at the deadline)
   * before the lock is released.
   */
  async function withTableLocked<T>(table: string, during: () => Promise<T>): Promise<T> {
    let release: () => void = () => undefined;
    let locked: () => void = () => undefined;
    const isLocked = new Promise<void>((resolve) => (locked = resolve));
    const held = admin.begin(async (tx) => {
      await tx.unsafe(`LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`);
      locked();
      await new Promise<void>((resolve) => (release = resolve));
    });
    await isLocked;
    try {
      return await during();
    } finally {
      release();
      await held;
    }
  }

  it('a transaction past the deadline is "not applied" and never commits, even once the server answers', async () => {
    const message = makeMessage(account.id, { id: 'msg_deadline_tx' });
    const statementDone = { at: 0 };
    const error = await withTableLocked('messages', () =>
      driver.executor
        .transaction(async (tx) => {
          await tx.messageInsertMany({ messages: [message] });
          statementDone.at = Date.now();
        })
        .then(
          () => undefined,
          (e: unknown) => e,
        ),
    );
    expect(error).toBeInstanceOf(StorageNoAnswerError);
    expect(error).toMatchObject({ applied: 'no', code: 'STORAGE_NO_ANSWER' });
    // The lock is released: the INSERT completes, then the transaction must roll back.
    const deadline = Date.now() + 10_000;
    while (statementDone.at === 0 && Date.now() < deadline) {
      await admin`SELECT pg_sleep(0.05)`;
    }
    expect(statementDone.at).toBeGreaterThan(0);
    // The driver's pool has answered everything sent before (its ROLLBACK included) once a
    // later statement on it returns.
    await driver.executor.messageCountInFlight({ accountId: account.id, now: T0 });
    const rows = await admin`SELECT id FROM messages WHERE id = ${message.id}`;
    expect(rows).toHaveLength(0);
    // Storage works again: the same insert commits.
    await driver.executor.transaction((tx) => tx.messageInsertMany({ messages: [message] }));
    expect(await admin`SELECT id FROM messages WHERE id = ${message.id}`).toHaveLength(1);
  });

  it('a read past the deadline is "not applied"; a write outside a transaction is "unknown"', async () => {
    const read = await withTableLocked('messages', () =>
      driver.executor.messageGet({ accountId: account.id, id: 'msg_x' }).then(
        () => undefined,
        (e: unknown) => e,
      ),
    );
    expect(read).toMatchObject({ applied: 'no', code: 'STORAGE_NO_ANSWER' });
    const write = await withTableLocked('messages', () =>
      driver.executor
        .messageDeleteMany({ accountId: account.id, filter: { messageIds: ['msg_x'] } })
        .then(
          () => undefined,
          (e: unknown) => e,
        ),
    );
    expect(write).toMatchObject({ applied: 'unknown', code: 'STORAGE_NO_ANSWER' });
  });
});
