import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readlinkSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { FerryError } from '../../core/errors.js';
import { newId } from '../../core/ids.js';
import {
  makeAccount,
  makeFullMessage,
  makeMessage,
  nextDueAt,
  T0,
} from '../conformance/fixtures.js';
import { runDriverConformance } from '../conformance/suite.js';
import { listMigrationFiles } from '../migrate-files.js';
import { openSqliteDriver, type SqliteDriver } from './sqlite-driver.js';

const tempDir = mkdtempSync(join(tmpdir(), 'ferry-sqlite-'));
afterAll(() => rmSync(tempDir, { recursive: true, force: true }));

/** A fresh database file path in the temp folder. */
const freshPath = (): string => join(tempDir, `${newId('db')}.sqlite`);

runDriverConformance('sqlite (memory)', () =>
  Promise.resolve(openSqliteDriver({ path: ':memory:' })),
);

// A fresh file per open: a file belongs to one driver at a time (see the exclusive-lock test).
runDriverConformance('sqlite (file)', () =>
  Promise.resolve(openSqliteDriver({ path: freshPath() })),
);

async function withDriver<T>(
  options: Parameters<typeof openSqliteDriver>[0],
  fn: (driver: SqliteDriver) => Promise<T>,
): Promise<T> {
  const driver = openSqliteDriver(options);
  try {
    await driver.migrate();
    return await fn(driver);
  } finally {
    await driver.close();
  }
}

describe('sqlite driver', () => {
  it('creates the file, in WAL mode, with full durability by default (async WAL fsync)', async () => {
    const path = freshPath();
    await withDriver({ path }, (driver) => {
      expect(existsSync(path)).toBe(true);
      expect(driver.name).toBe('sqlite');
      expect(driver.settings()).toEqual({
        journalMode: 'wal',
        synchronous: 'full',
        walFsync: 'async',
        busyTimeoutMs: 5_000,
      });
      return Promise.resolve();
    });
  });

  it('uses synchronous=NORMAL when asked', async () => {
    await withDriver({ path: freshPath(), synchronous: 'normal' }, (driver) => {
      expect(driver.settings().synchronous).toBe('normal');
      expect(driver.settings().walFsync).toBe('none');
      return Promise.resolve();
    });
  });

  it('keeps an in-memory database in memory', async () => {
    await withDriver({ path: ':memory:' }, (driver) => {
      expect(driver.settings().journalMode).toBe('memory');
      return Promise.resolve();
    });
  });

  it('keeps data across close and reopen', async () => {
    const path = freshPath();
    const account = makeAccount();
    const message = makeMessage(account.id);
    await withDriver({ path }, async (driver) => {
      await driver.executor.accountInsert({ account });
      await driver.executor.messageInsertMany({ messages: [message] });
    });
    await withDriver({ path }, async (driver) => {
      expect(await driver.executor.accountGet({ id: account.id })).toEqual(account);
      const got = await driver.executor.messageGet({ accountId: account.id, id: message.id });
      expect(got?.id).toBe(message.id);
    });
  });

  it('records applied migrations in ferry_migrations, once', async () => {
    const path = freshPath();
    await withDriver({ path }, (driver) => driver.migrate());
    await withDriver({ path }, () => Promise.resolve());
    const db = new Database(path, { readonly: true });
    try {
      const rows = db.prepare('SELECT version, name FROM ferry_migrations ORDER BY version').all();
      const files = listMigrationFiles(new URL('./migrations/', import.meta.url));
      expect(rows).toEqual(files.map((f) => ({ version: f.version, name: f.name })));
      expect(rows[0]).toEqual({ version: 1, name: 'init' });
    } finally {
      db.close();
    }
  });

  it('refuses a second opener of the same file: one process per database (leases are in memory)', async () => {
    const path = freshPath();
    await withDriver({ path }, async () => {
      expect(() => openSqliteDriver({ path })).toThrow(/in use by another Ferry process/);
      return Promise.resolve();
    });
    // Once the owner closes, the file opens again.
    await withDriver({ path }, () => Promise.resolve());
  });

  it('keeps leases in memory: a rolled-back claim is undone, and the lease expiry is the next due time', async () => {
    await withDriver({ path: freshPath() }, async (driver) => {
      const account = makeAccount();
      await driver.executor.accountInsert({ account });
      const message = makeMessage(account.id, { dueAt: 1_000 });
      await driver.executor.messageInsertMany({ messages: [message] });
      const failed = driver.executor.transaction(async (tx) => {
        expect(await tx.messageClaimDue({ now: 1_000, limit: 10, leaseUntil: 5_000 })).toHaveLength(
          1,
        );
        throw new Error('abort');
      });
      await expect(failed).rejects.toThrow('abort');
      // The rolled-back claim left no lease: the message is claimable at once.
      const [claimed] = await driver.executor.messageClaimDue({
        now: 1_000,
        limit: 10,
        leaseUntil: 5_000,
      });
      expect(claimed?.id).toBe(message.id);
      expect(await nextDueAt(driver.executor, 1_000)).toBe(5_000);
    });
  });

  it('claims a message kept since its insert exactly as its row reads, once', async () => {
    await withDriver({ path: freshPath() }, async (driver) => {
      const account = makeAccount();
      await driver.executor.accountInsert({ account });
      // Every optional column set but the gates' (a gated message waits parked: never kept).
      const full = makeFullMessage(account.id, { queueName: undefined });
      const kept = {
        ...full,
        spec: { ...full.spec, flowControl: undefined },
        dueAt: full.createdAt,
      };
      // Due a minute after its creation: not kept, read from its row.
      const read = { ...kept, id: newId('msg'), dueAt: kept.createdAt + 60_000 };
      await driver.executor.messageInsertMany({ messages: [kept, read] });
      const expected = (m: typeof kept) => ({
        ...m,
        spec: structuredClone(m.spec),
        body: Buffer.from(m.body),
        dueAt: now + 30_000,
        leaseToken: expect.any(String) as unknown,
      });
      const now = kept.createdAt + 120_000;
      const expectedKept = expected(kept);
      const expectedRead = expected(read);
      // A caller changing its object after the insert changes nothing stored or claimed.
      kept.spec.headers['X-Later'] = ['changed'];

      const claimed = await driver.executor.messageClaimDue({
        now,
        limit: 10,
        leaseUntil: now + 30_000,
      });
      expect(claimed.map((m) => m.id)).toEqual([kept.id, read.id]);
      expect(claimed[0]).toEqual(expectedKept);
      expect(claimed[1]).toEqual(expectedRead);

      // After a failed attempt the row says retried 1: the next claim reads it, not the insert.
      const first = claimed[0]!;
      await driver.executor.messageRetryManyLeased({
        retries: [{ id: first.id, leaseToken: first.leaseToken, dueAt: now, retried: 1 }],
      });
      const again = await driver.executor.messageClaimDue({
        now,
        limit: 10,
        leaseUntil: now + 60_000,
      });
      expect(again.map((m) => [m.id, m.retried])).toEqual([[kept.id, 1]]);
    });
  });

  it('never claims a message kept since its insert once its row is gone', async () => {
    await withDriver({ path: freshPath() }, async (driver) => {
      const account = makeAccount();
      await driver.executor.accountInsert({ account });
      const message = makeMessage(account.id);
      const rolledBack = makeMessage(account.id);
      await driver.executor.messageInsertMany({ messages: [message] });
      await expect(
        driver.executor.transaction(async (tx) => {
          await tx.messageInsertMany({ messages: [rolledBack] });
          throw new Error('abort');
        }),
      ).rejects.toThrow('abort');
      const deleted = await driver.executor.messageDeleteMany({
        accountId: account.id,
        filter: {},
      });
      expect(deleted.map((m) => m.id)).toEqual([message.id]);
      const now = message.createdAt + 1_000;
      expect(
        await driver.executor.messageClaimDue({ now, limit: 10, leaseUntil: now + 30_000 }),
      ).toEqual([]);
    });
  });

  it('refuses a database migrated by a newer Ferry', async () => {
    const path = freshPath();
    await withDriver({ path }, () => Promise.resolve());
    const db = new Database(path);
    db.prepare('INSERT INTO ferry_migrations (version, name, applied_at) VALUES (999, ?, 0)').run(
      'future',
    );
    db.close();
    const driver = openSqliteDriver({ path });
    try {
      await expect(driver.migrate()).rejects.toThrow(/newer/);
    } finally {
      await driver.close();
    }
  });

  it('rejects operations after close', async () => {
    const driver = openSqliteDriver({ path: ':memory:' });
    await driver.migrate();
    await driver.close();
    await expect(driver.executor.accountGet({ id: 'x' })).rejects.toThrow(/closed/);
    await expect(driver.executor.transaction(() => Promise.resolve())).rejects.toThrow(/closed/);
  });

  it('runs an operation issued during a transaction after the commit', async () => {
    await withDriver({ path: ':memory:' }, async ({ executor }) => {
      const account = makeAccount();
      let seen: Promise<unknown> | undefined;
      await executor.transaction(async (tx) => {
        await tx.accountInsert({ account });
        seen = executor.accountGet({ id: account.id });
        await tx.accountGet({ id: account.id });
      });
      expect(await seen).toEqual(account);
    });
  });

  it('rejects use of a transaction executor after its transaction ended', async () => {
    await withDriver({ path: ':memory:' }, async ({ executor }) => {
      const leaked = await executor.transaction((tx) => Promise.resolve(tx));
      await expect(leaked.accountGet({ id: 'x' })).rejects.toThrow(/ended/);
      await expect(leaked.transaction(() => Promise.resolve())).rejects.toThrow(/ended/);
    });
  });

  it('reports nested transactions of one tx that overlap', async () => {
    await withDriver({ path: ':memory:' }, async ({ executor }) => {
      const run = executor.transaction(async (tx) => {
        let release = (): void => {};
        const blocked = new Promise<void>((resolve) => (release = resolve));
        // `first` ends while `second`, begun after it, is still open.
        const first = tx.transaction(() => blocked);
        const second = tx.transaction(async () => {
          release();
          await first.catch(() => {});
        });
        await Promise.all([first, second]);
      });
      await expect(run).rejects.toThrow(/overlapped/);
    });
  });

  // Operations inside a transaction run in no savepoint of their own (sqlite-statements.ts):
  // one that fails after writing fails the transaction, as PostgreSQL does.
  it('fails a transaction in which an operation failed midway: later operations throw and it rolls back', async () => {
    await withDriver({ path: freshPath() }, async ({ executor }) => {
      const account = makeAccount();
      await executor.accountInsert({ account });
      const taken = makeMessage(account.id);
      await executor.messageInsertMany({ messages: [taken] });
      const fresh = makeMessage(account.id);
      const run = executor.transaction(async (tx) => {
        // `fresh` is written, then the duplicate id fails the operation.
        const failed = tx.messageInsertMany({
          messages: [fresh, makeMessage(account.id, { id: taken.id })],
        });
        await expect(failed).rejects.toThrow(/UNIQUE/);
        await expect(tx.messageGet({ accountId: account.id, id: fresh.id })).rejects.toThrow(
          /earlier operation of this transaction failed/,
        );
      });
      await expect(run).rejects.toThrow(/earlier operation of this transaction failed/);
      expect(await executor.messageGet({ accountId: account.id, id: fresh.id })).toBeUndefined();
      // The connection is sound again for the next transaction.
      await executor.transaction((tx) => tx.messageInsertMany({ messages: [fresh] }));
      expect((await executor.messageGet({ accountId: account.id, id: fresh.id }))?.id).toBe(
        fresh.id,
      );
    });
  });

  it('keeps a transaction sound when the failure was undone by its savepoint, or wrote nothing', async () => {
    await withDriver({ path: freshPath() }, async ({ executor }) => {
      const account = makeAccount();
      await executor.accountInsert({ account });
      const taken = makeMessage(account.id);
      await executor.messageInsertMany({ messages: [taken] });
      const [lost, nothing, kept] = [1, 2, 3].map(() => makeMessage(account.id));
      await executor.transaction(async (tx) => {
        const nested = tx.transaction((inner) =>
          inner.messageInsertMany({ messages: [lost!, makeMessage(account.id, { id: taken.id })] }),
        );
        await expect(nested).rejects.toThrow(/UNIQUE/);
        // The duplicate comes first: the operation fails before writing anything.
        const early = tx.messageInsertMany({
          messages: [makeMessage(account.id, { id: taken.id }), nothing!],
        });
        await expect(early).rejects.toThrow(/UNIQUE/);
        await tx.messageInsertMany({ messages: [kept!] });
      });
      const ids = await Promise.all(
        [lost!, nothing!, kept!].map((m) =>
          executor.messageGet({ accountId: account.id, id: m.id }),
        ),
      );
      expect(ids.map((m) => m?.id)).toEqual([undefined, undefined, kept!.id]);
    });
  });

  // SQLite keeps a statement's journal in memory up to 64 KiB and then in a temporary file, which
  // every later statement of the transaction also writes to (sqlite-ops.ts, DELETE_CHUNK).
  it.skipIf(!existsSync('/proc/self/fd'))(
    'finishes a large batch of delivered messages without a temporary statement journal',
    async () => {
      await withDriver({ path: freshPath() }, async ({ executor }) => {
        const account = makeAccount();
        await executor.accountInsert({ account });
        // Rows the size of the benchmark's: a few hundred bytes of body, a header, a label.
        const body = new TextEncoder().encode(JSON.stringify({ text: 'x'.repeat(300) }));
        const messages = Array.from({ length: 200 }, (_, i) =>
          makeMessage(account.id, {
            createdAt: T0 + i,
            body,
            spec: {
              method: 'POST',
              headers: { 'Content-Type': ['application/json'], 'X-Request': [`req-${i}`] },
              labels: ['orders'],
            },
          }),
        );
        await executor.messageInsertMany({ messages });
        const claimed = await executor.messageClaimDue({
          now: T0 + 1_000,
          limit: 200,
          leaseUntil: T0 + 60_000,
        });
        expect(claimed).toHaveLength(200);
        const temporaryFiles = (): string[] =>
          readdirSync('/proc/self/fd')
            .map((fd) => {
              try {
                return readlinkSync(`/proc/self/fd/${fd}`);
              } catch {
                return ''; // closed meanwhile (the directory's own descriptor)
              }
            })
            .filter((target) => target.includes('etilqs'));
        // Across the statements' boundaries the fencing still holds: a lease with a wrong token
        // and one whose row is already gone are left out, the rest come back in lease order.
        const gone = claimed[17]!;
        await executor.messageDeleteLeasedMany({ leases: [gone] });
        const leases = claimed.map((m, i) => (i === 40 ? { ...m, leaseToken: 'stale' } : m));
        const deleted = await executor.transaction(async (tx) => {
          const ids = await tx.messageDeleteLeasedMany({ leases });
          // The sub-journal file, had there been one, stays open until the transaction ends.
          expect(temporaryFiles()).toEqual([]);
          return ids;
        });
        const expected = claimed.filter((_, i) => i !== 17 && i !== 40).map((m) => m.id);
        expect(deleted).toEqual(expected);
        expect(await executor.messageGet({ accountId: account.id, id: claimed[0]!.id })).toBe(
          undefined,
        );
        // The row behind the stale lease is untouched.
        expect(
          (await executor.messageGet({ accountId: account.id, id: claimed[40]!.id }))?.id,
        ).toBe(claimed[40]!.id);
      });
    },
  );

  it('rejects a malformed event cursor with a 400', async () => {
    await withDriver({ path: ':memory:' }, async ({ executor }) => {
      const list = executor.eventList({ accountId: 'a', filter: {}, count: 10, cursor: 'abc' });
      await expect(list).rejects.toBeInstanceOf(FerryError);
      await expect(list).rejects.toMatchObject({ status: 400 });
    });
  });
});

describe('listMigrationFiles', () => {
  it('lists NNN_name.sql files by version and ignores other files', () => {
    const dir = join(tempDir, newId('migrations'));
    mkdirSync(dir);
    for (const name of ['010_later.sql', '002_second.sql', '001_init.sql', 'README.md', 'x.sql']) {
      writeFileSync(join(dir, name), '');
    }
    expect(listMigrationFiles(dir).map((f) => [f.version, f.name])).toEqual([
      [1, 'init'],
      [2, 'second'],
      [10, 'later'],
    ]);
  });

  it('rejects two files with one version, and a missing folder', () => {
    const dir = join(tempDir, newId('migrations'));
    mkdirSync(dir);
    writeFileSync(join(dir, '001_a.sql'), '');
    writeFileSync(join(dir, '1_b.sql'), '');
    expect(() => listMigrationFiles(dir)).toThrow(/version 1/);
    expect(() => listMigrationFiles(join(dir, 'missing'))).toThrow(/migrations folder/);
  });
});

describe('sqlite backup', () => {
  it('copies online: waits out a transaction open on the connection, includes what it committed', async () => {
    await withDriver({ path: freshPath() }, async (driver) => {
      for (let i = 0; i < 50; i++) await driver.executor.accountInsert({ account: makeAccount() });
      let release = (): void => undefined;
      const gate = new Promise<void>((resolve) => (release = resolve));
      const late = makeAccount();
      // A transaction that stays open across turns of the event loop, as publishes do.
      const tx = driver.executor.transaction(async (t) => {
        await t.accountInsert({ account: late });
        await gate;
      });
      const copy = freshPath();
      const backup = (driver.backup as (path: string) => Promise<void>)(copy);
      // The backup's steps find the transaction open and retry; it commits, then they go on.
      await new Promise((resolve) => setImmediate(resolve));
      release();
      await tx;
      await backup;
      await driver.executor.accountInsert({ account: makeAccount() }); // after: not in the copy
      const db = new Database(copy, { readonly: true });
      try {
        expect(db.pragma('quick_check', { simple: true })).toBe('ok');
        const ids = db.prepare('SELECT id FROM accounts').pluck().all() as string[];
        expect(ids).toHaveLength(51);
        expect(ids).toContain(late.id);
      } finally {
        db.close();
      }
    });
  });
});
