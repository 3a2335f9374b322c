/**
 * Migration 011 (bodies stored once) moves the bodies of existing rows: a database at version 10
 * with large bodies in messages, events and the DLQ reads the same bytes after the upgrade, with
 * each large body in `bodies` (a waiting message and its CREATED event sharing one), small ones
 * left inline, and every moved body freed once its rows go.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import postgres from 'postgres';
import { describe, expect, it } from 'vitest';
import { listMigrationFiles, readMigrationFile } from '../src/storage/migrate-files.js';
import type { Driver } from '../src/storage/driver.js';
import { openSqliteDriver } from '../src/storage/sqlite/sqlite-driver.js';
import { openPostgresDriver } from '../src/storage/postgres/postgres-driver.js';
import { dlqMessageJson } from '../src/storage/sql/rows.js';
import { makeMessage } from '../src/storage/conformance/fixtures.js';
import { pgUrl, STORAGES } from './helpers/ferry.js';

const BIG = Buffer.from(Array.from({ length: 100_000 }, (_, i) => (i * 31 + 7) % 256));
const SMALL = Buffer.from('{"small":true}');
const T = 1_700_000_000_000;
const ACCOUNT = 'acct_migrated';

/** The rows a version-10 database holds: [table, columns, values] with `?` placeholders. */
function oldRows(): [string, string[], unknown[]][] {
  const message = (id: string, body: Buffer): [string, string[], unknown[]] => [
    'messages',
    [
      'id',
      'account_id',
      'url',
      'url_host',
      'url_path',
      'caller_ip',
      'retried',
      'max_retries',
      'not_before',
      'created_at',
      'due_at',
      'spec',
      'body',
    ],
    [
      id,
      ACCOUNT,
      'https://example.com/x',
      'example.com',
      '/x',
      '127.0.0.1',
      0,
      3,
      T,
      T,
      T,
      '{"method":"POST","headers":{}}',
      body,
    ],
  ];
  const event = (messageId: string, body: Buffer): [string, string[], unknown[]] => [
    'events',
    [
      'account_id',
      'message_id',
      'time',
      'state',
      'url',
      'url_host',
      'url_path',
      'method',
      'caller_ip',
      'retried',
      'max_retries',
      'header',
      'body',
    ],
    [
      ACCOUNT,
      messageId,
      T,
      'CREATED',
      'https://example.com/x',
      'example.com',
      '/x',
      'POST',
      '127.0.0.1',
      0,
      3,
      '{}',
      body,
    ],
  ];
  const failed = makeMessage(ACCOUNT, { id: 'msg_failed', body: BIG });
  return [
    message('msg_waiting', BIG),
    event('msg_waiting', BIG),
    message('msg_small', SMALL),
    event('msg_small', SMALL),
    event('msg_failed', BIG),
    [
      'dlq',
      [
        'dlq_id',
        'account_id',
        'message_id',
        'created_at',
        'expires_at',
        'url',
        'url_host',
        'url_path',
        'caller_ip',
        'message',
        'body',
      ],
      [
        'dlq_1',
        ACCOUNT,
        'msg_failed',
        T,
        T + 86_400_000,
        failed.url,
        'example.com',
        '/hook',
        '127.0.0.1',
        dlqMessageJson(failed),
        BIG,
      ],
    ],
  ];
}

async function checkMigrated(driver: Driver): Promise<void> {
  await driver.migrate();
  const ex = driver.executor;
  expect(await ex.bodyUsage()).toEqual({ count: 3, bytes: 300_000 });
  const waiting = await ex.messageGet({ accountId: ACCOUNT, id: 'msg_waiting' });
  expect(Buffer.from(waiting?.body ?? []).equals(BIG)).toBe(true);
  const small = await ex.messageGet({ accountId: ACCOUNT, id: 'msg_small' });
  expect(Buffer.from(small?.body ?? []).equals(SMALL)).toBe(true);
  const entry = await ex.dlqGet({ accountId: ACCOUNT, dlqId: 'dlq_1' });
  expect(Buffer.from(entry?.message.body ?? []).equals(BIG)).toBe(true);
  const events = await ex.eventList({ accountId: ACCOUNT, filter: {}, count: 10, bodyCut: 1_000 });
  expect(events.items).toHaveLength(3);
  for (const event of events.items) {
    const whole = event.messageId === 'msg_small' ? SMALL : BIG;
    expect(Buffer.from(event.body ?? []).equals(whole.subarray(0, 1_000))).toBe(true);
  }

  // Everything deleted: every moved body is freed.
  await ex.messageDeleteMany({ accountId: ACCOUNT, filter: {} });
  await ex.eventDeleteBefore({ before: T + 1, limit: 100 });
  await ex.dlqDeleteMany({ accountId: ACCOUNT, dlqIds: ['dlq_1'] });
  expect(await ex.bodyDeleteUnreferenced({ limit: 100 })).toBe(3);
  expect(await ex.bodyUsage()).toEqual({ count: 0, bytes: 0 });
}

describe.each(STORAGES)('migration 011 on %s', (storage) => {
  it('moves large bodies of existing messages, events and DLQ entries into bodies', async () => {
    const dirs = new URL(
      storage === 'sqlite'
        ? '../src/storage/sqlite/migrations/'
        : '../src/storage/postgres/migrations/',
      import.meta.url,
    );
    const before11 = listMigrationFiles(dirs).filter((f) => f.version <= 10);
    if (storage === 'sqlite') {
      const dir = mkdtempSync(join(tmpdir(), 'ferry-m011-'));
      try {
        const path = join(dir, 'ferry.db');
        const db = new Database(path);
        db.exec(
          'CREATE TABLE ferry_migrations (version INTEGER PRIMARY KEY, name TEXT, applied_at INTEGER)',
        );
        for (const file of before11) {
          db.exec(readMigrationFile(file));
          db.prepare('INSERT INTO ferry_migrations VALUES (?, ?, 0)').run(file.version, file.name);
        }
        for (const [table, columns, values] of oldRows()) {
          db.prepare(
            `INSERT INTO ${table} (${columns.join(', ')}) VALUES (${columns.map(() => '?').join(', ')})`,
          ).run(...values);
        }
        db.close();
        const driver = openSqliteDriver({ path });
        try {
          await checkMigrated(driver);
        } finally {
          await driver.close();
        }
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
      return;
    }
    const schema = `m011_${Date.now()}_${Math.floor(Math.random() * 1e6)}`;
    const sql = postgres(pgUrl ?? '', { onnotice: () => undefined });
    try {
      await sql.unsafe(`CREATE SCHEMA ${schema}`);
      await sql.begin(async (tx) => {
        await tx.unsafe(`SET LOCAL search_path TO ${schema}`);
        await tx.unsafe(
          'CREATE TABLE ferry_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)',
        );
        for (const file of before11) {
          await tx.unsafe(readMigrationFile(file));
          await tx`INSERT INTO ferry_migrations VALUES (${file.version}, ${file.name}, 0)`;
        }
        for (const [table, columns, values] of oldRows()) {
          await tx.unsafe(
            `INSERT INTO ${table} (${columns.join(', ')}) VALUES (${columns.map((_, i) => `$${i + 1}`).join(', ')})`,
            values as postgres.ParameterOrJSON<never>[],
          );
        }
      });
      const driver = openPostgresDriver({ url: pgUrl ?? '', schema });
      try {
        await checkMigrated(driver);
      } finally {
        await driver.close();
      }
    } finally {
      await sql.unsafe(`DROP SCHEMA ${schema} CASCADE`);
      await sql.end();
    }
  });
});
