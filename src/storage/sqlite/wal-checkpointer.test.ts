import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { newId } from '../../core/ids.js';
import type { Account } from '../../core/types.js';
import { makeAccount } from '../conformance/fixtures.js';
import { lockFilePath } from './database-lock.js';
import { openSqliteDriver, type SqliteDriver, type SqliteDriverOptions } from './sqlite-driver.js';
import {
  DEFAULT_CHECKPOINT_LIMITS,
  nextCheckpoint,
  type CheckpointEvent,
  type CheckpointLimits,
} from './wal-checkpointer.js';

const tempDir = mkdtempSync(join(tmpdir(), 'ferry-checkpoint-'));
afterAll(() => rmSync(tempDir, { recursive: true, force: true }));
const freshPath = (): string => join(tempDir, `${newId('db')}.sqlite`);

/** Bytes of one WAL frame at SQLite's default page size (header included). */
const FRAME_BYTES = 4_096 + 24;

/** Small limits, so that a test reaches every step with a few megabytes of commits. */
const SMALL: CheckpointLimits = {
  startFrames: 50,
  limitFrames: 400,
  residueFrames: 32,
  maxPasses: 4,
};

/** A driver whose checkpoint events are recorded; `next` waits for one, with a deadline. */
async function openRecorded(options: Omit<SqliteDriverOptions, 'onCheckpoint'>): Promise<{
  driver: SqliteDriver;
  events: CheckpointEvent[];
  next: (match: (event: CheckpointEvent) => boolean, what: string) => Promise<CheckpointEvent>;
}> {
  const events: CheckpointEvent[] = [];
  const waiters: {
    match: (event: CheckpointEvent) => boolean;
    resolve: (e: CheckpointEvent) => void;
  }[] = [];
  const driver = openSqliteDriver({
    ...options,
    onCheckpoint: (event) => {
      events.push(event);
      for (const waiter of waiters.splice(0)) {
        if (waiter.match(event)) waiter.resolve(event);
        else waiters.push(waiter);
      }
    },
  });
  await driver.migrate();
  const next = (
    match: (event: CheckpointEvent) => boolean,
    what: string,
  ): Promise<CheckpointEvent> =>
    new Promise((resolve, reject) => {
      const seen = events.find(match);
      if (seen) return resolve(seen);
      const deadline = setTimeout(() => reject(new Error(`no checkpoint event: ${what}`)), 20_000);
      waiters.push({
        match,
        resolve: (event) => {
          clearTimeout(deadline);
          resolve(event);
        },
      });
    });
  return { driver, events, next };
}

/**
 * Commits `count` transactions of 10 accounts (about 6 WAL frames each), one after another. Each
 * waits a turn of the event loop after its commit, as the next request would arrive through I/O:
 * the checkpoint thread's answers come in between.
 */
async function commitMany(driver: SqliteDriver, count: number): Promise<void> {
  for (let i = 0; i < count; i++) {
    await driver.executor.transaction(async (tx) => {
      for (let j = 0; j < 10; j++) {
        await tx.accountInsert({ account: makeAccount({ passwordHash: 'a'.repeat(1_000) }) });
      }
    });
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/** Opens `path` read-only in a connection of its own, checks it is whole, then runs `read`. */
function readWhole<T>(path: string, read: (db: Database.Database) => T): T {
  const db = new Database(path, { readonly: true });
  try {
    expect(db.pragma('quick_check', { simple: true })).toBe('ok');
    return read(db);
  } finally {
    db.close();
  }
}

const walBytes = (path: string): number =>
  existsSync(`${path}-wal`) ? statSync(`${path}-wal`).size : 0;

describe('nextCheckpoint', () => {
  const limits = DEFAULT_CHECKPOINT_LIMITS; // start 1,000, limit 4,096, residue 256, 4 passes
  it.each([
    // after a commit (passes 0)
    [{ logFrames: 999, checkpointedFrames: 0 }, 0, undefined, 'too little to copy yet'],
    [{ logFrames: 1_500, checkpointedFrames: 500 }, 0, 'passive', '1,000 frames to copy'],
    [{ logFrames: 5_000, checkpointedFrames: 4_990 }, 0, 'passive', 'over the limit, any to copy'],
    [{ logFrames: 5_000, checkpointedFrames: 5_000 }, 0, undefined, 'all copied: resets itself'],
    // after a passive pass
    [{ logFrames: 2_000, checkpointedFrames: 1_900 }, 1, undefined, 'under the limit: done'],
    [{ logFrames: 5_000, checkpointedFrames: 4_000 }, 1, 'passive', 'over, much left: copy more'],
    [{ logFrames: 5_000, checkpointedFrames: 4_800 }, 1, 'restart', 'over, little left: reset'],
    [{ logFrames: 5_000, checkpointedFrames: 4_000 }, 4, 'restart', 'over, passes used up'],
    [{ logFrames: 5_000, checkpointedFrames: 5_000 }, 2, undefined, 'over, all copied'],
  ] as const)('%o after %i passes: %s (%s)', (wal, passes, expected, _why) => {
    expect(nextCheckpoint(wal, passes, limits)).toBe(expected);
  });
});

describe('WAL checkpoints on their own thread', { timeout: 60_000 }, () => {
  it('never checkpoints inside a commit on the main thread, however large the WAL grows', async () => {
    const path = freshPath();
    // Limits no WAL reaches: only SQLite's automatic checkpoint could copy and reset the WAL.
    const never = { ...SMALL, startFrames: 1e9, limitFrames: 1e9 };
    const { driver, events } = await openRecorded({ path, checkpointLimits: never });
    try {
      await commitMany(driver, 600); // about 3,600 frames: past SQLite's 1,000 three times
      expect(events).toEqual([]);
      // With the automatic checkpoint, a commit would have reset the WAL near 1,000 frames.
      expect(walBytes(path)).toBeGreaterThan(3_000 * FRAME_BYTES);
    } finally {
      await driver.close();
    }
  });

  it('copies the WAL on the checkpoint thread once it has grown, while commits go on', async () => {
    const path = freshPath();
    const { driver, next } = await openRecorded({ path });
    try {
      await commitMany(driver, 200); // about 1,200 frames: past the 1,000 that start a checkpoint
      const event = await next((e) => e.type === 'done', 'a passive checkpoint');
      expect(event).toMatchObject({ type: 'done', mode: 'passive', busy: false });
      if (event.type !== 'done') throw new Error('unreachable');
      expect(event.wal.checkpointedFrames).toBeGreaterThanOrEqual(1_000);
      // Readable by another connection while the driver runs: it holds no exclusive lock on it.
      readWhole(path, () => undefined);
    } finally {
      await driver.close();
    }
  });

  it('keeps the WAL bounded under continuous commits (passive passes, then a RESTART)', async () => {
    const path = freshPath();
    // synchronous=normal: no fsync wait between commits, so the main thread commits without a
    // pause and passive checkpoints alone never see the WAL fully copied.
    const { driver, events, next } = await openRecorded({
      path,
      synchronous: 'normal',
      checkpointLimits: SMALL,
    });
    try {
      // The thread starts at the first checkpoint; the WAL grows meanwhile, once.
      await commitMany(driver, 20);
      await next((e) => e.type === 'done', 'the first checkpoint');
      const frames = (): number => Math.round(walBytes(path) / FRAME_BYTES);
      const sizes: number[] = [];
      for (let round = 0; round < 40; round++) {
        await commitMany(driver, 35); // about 200 frames a round, 8,000 in all: 20 times the limit
        sizes.push(frames());
      }
      await next((e) => e.mode === 'restart', 'a RESTART checkpoint');
      expect(events.filter((e) => e.type === 'failed')).toEqual([]);
      // How far the WAL grows between two resets is what commits add while the passes before
      // the RESTART run: about twice the limit on an idle machine, 12 times once in a loaded CI
      // run (a stalled checkpoint thread, slow fsyncs), so its peak is not the measure. What
      // the mechanism guarantees is that the WAL is reset while commits go on and its file cut
      // back to the limit (`journal_size_limit`) instead of keeping all that was committed:
      // with commits still going on, the file comes back to the limit.
      const limitBytes = SMALL.limitFrames * FRAME_BYTES;
      const deadline = Date.now() + 20_000;
      while (walBytes(path) > limitBytes && Date.now() < deadline) await commitMany(driver, 1);
      expect(walBytes(path), `WAL frames after each round: ${sizes.join(' ')}`).toBeLessThanOrEqual(
        limitBytes,
      );
    } finally {
      await driver.close();
    }
  });

  it('takes a whole online backup while checkpoints run beside the commits', async () => {
    const path = freshPath();
    const { driver, next } = await openRecorded({ path, checkpointLimits: SMALL });
    try {
      await commitMany(driver, 40);
      await next((e) => e.type === 'done', 'a checkpoint (the thread started)');
      const copy = freshPath();
      // Commits (and so checkpoints) go on between the backup's steps.
      const writing = commitMany(driver, 40);
      await (driver.backup as (path: string) => Promise<void>)(copy);
      await writing;
      const count = readWhole(
        copy,
        (db) => db.prepare('SELECT count(*) FROM accounts').pluck().get() as number,
      );
      // Whole transactions only: ten accounts each, none in part.
      expect(count % 10).toBe(0);
      expect(count).toBeGreaterThanOrEqual(400);
    } finally {
      await driver.close();
    }
  });

  it('closes the checkpoint thread first, so the main connection removes the WAL at close', async () => {
    const path = freshPath();
    const { driver, next } = await openRecorded({ path, checkpointLimits: SMALL });
    await commitMany(driver, 20);
    await next((e) => e.type === 'done', 'a checkpoint (the thread started)');
    await driver.close();
    // SQLite deletes the WAL only when the last connection to the file closes.
    expect(existsSync(`${path}-wal`)).toBe(false);
    const reopened = openSqliteDriver({ path });
    await reopened.close();
  });
});

describe('one process per database file', { timeout: 60_000 }, () => {
  /** A Ferry process stand-in: the built driver, opened in a child process. */
  const holder = (path: string, account: Account) => {
    const driverUrl = new URL('../../../dist/storage/sqlite/sqlite-driver.js', import.meta.url);
    const script = `
      const { openSqliteDriver } = await import(${JSON.stringify(driverUrl.href)});
      const driver = openSqliteDriver({ path: ${JSON.stringify(path)} });
      await driver.migrate();
      await driver.executor.accountInsert({ account: ${JSON.stringify(account)} });
      process.stdout.write('ready\\n');
      setInterval(() => {}, 1 << 30);`;
    expect(existsSync(fileURLToPath(driverUrl)), 'run `npm run build` first').toBe(true);
    return spawn(process.execPath, ['--input-type=module', '-e', script], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
  };

  it('keeps the checkpoint thread holding the process open while close() waits for it', async () => {
    // A program whose last work is `await driver.close()` must reach the line after it. The
    // checkpoint thread answering a checkpoint during the close once stopped holding the process
    // open while the close still waited for the thread's exit: such a program then ended at the
    // close, silently, with status 0 (seen in the benchmark). The thread's port is what holds it.
    const ports = (): number =>
      process.getActiveResourcesInfo().filter((r) => r === 'MessagePort').length;
    const before = ports();
    let closing = false;
    const duringClose: number[] = [];
    const driver = openSqliteDriver({
      path: freshPath(),
      checkpointLimits: SMALL,
      onCheckpoint: () => {
        if (closing) duringClose.push(ports());
      },
    });
    await driver.migrate();
    // A commit large enough to start a checkpoint (on a thread that takes a while to start),
    // not waited for on disk: the close comes before the checkpoint's answer.
    await driver.executor.transaction(
      async (tx) => {
        for (let j = 0; j < 300; j++) {
          await tx.accountInsert({ account: makeAccount({ passwordHash: 'a'.repeat(1_000) }) });
        }
      },
      { durable: false },
    );
    closing = true;
    await driver.close();
    expect(duringClose.length).toBeGreaterThan(0);
    expect(duringClose.every((n) => n === before + 1)).toBe(true);
  });

  it('refuses a second process, and takes the file once the holder is killed (SIGKILL)', async () => {
    const path = freshPath();
    const account = makeAccount();
    const child = holder(path, account);
    const [chunk] = (await once(child.stdout, 'data')) as [Buffer];
    expect(chunk.toString()).toContain('ready');
    expect(() => openSqliteDriver({ path })).toThrow(/in use by another Ferry process/);
    expect(statSync(lockFilePath(path)).mode & 0o777).toBe(0o600);
    child.kill('SIGKILL');
    await once(child, 'exit');
    // The operating system dropped the dead process's lock: no stale lock file to clean up.
    const driver = openSqliteDriver({ path });
    try {
      await driver.migrate();
      // What the killed process committed is there.
      expect(await driver.executor.accountGet({ id: account.id })).toEqual(account);
    } finally {
      await driver.close();
    }
  });

  it('keeps the file locked while the process lives, even once nothing refers to the driver', async () => {
    const path = freshPath();
    const driverUrl = new URL('../../../dist/storage/sqlite/sqlite-driver.js', import.meta.url);
    // The driver is dropped and collected: only closing it, or the process ending, may unlock.
    const script = `
      const { openSqliteDriver } = await import(${JSON.stringify(driverUrl.href)});
      await (async () => {
        const driver = openSqliteDriver({ path: ${JSON.stringify(path)} });
        await driver.migrate();
      })();
      for (let i = 0; i < 5; i++) {
        globalThis.gc();
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      process.stdout.write('ready\\n');
      setInterval(() => {}, 1 << 30);`;
    const child = spawn(process.execPath, ['--expose-gc', '--input-type=module', '-e', script], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    try {
      const [chunk] = (await once(child.stdout, 'data')) as [Buffer];
      expect(chunk.toString()).toContain('ready');
      expect(() => openSqliteDriver({ path })).toThrow(/in use by another Ferry process/);
    } finally {
      child.kill('SIGKILL');
      await once(child, 'exit');
    }
  });
});
