/**
 * The SQLite side of `ferry backup` and `ferry restore` (backup.ts): checking a copy, taking the
 * data directory's lock, putting the copy in place. A module of its own, loaded by those two
 * commands only, so that every other command starts without better-sqlite3: `ferry keys get`
 * took 0.93 and 0.97 times the CPU of before (medians of 12 and 20 farm-bench pairs; a start is
 * about 290 ms of CPU on the development machine).
 */
import { chmodSync, existsSync, renameSync, rmSync } from 'node:fs';
import Database from 'better-sqlite3';
import {
  DatabaseInUseError,
  lockDatabase,
  type DatabaseLock,
} from '../../storage/sqlite/database-lock.js';
import { UsageError } from '../errors.js';

/**
 * Checks that `path` is a whole Ferry database: SQLite's `quick_check` passes and it has
 * applied migrations. Returns the newest migration version. `standalone` (a fresh download)
 * also switches the copy from WAL to a rollback journal, so that it is one self-contained file
 * (reading a WAL file leaves `-wal` and `-shm` files beside it); Ferry turns WAL back on when it
 * opens the restored database.
 */
export function checkBackup(path: string, standalone = false): number {
  let db: Database.Database;
  try {
    db = new Database(path, { readonly: !standalone, fileMustExist: true });
    if (standalone) db.pragma('journal_mode = DELETE');
  } catch (error) {
    throw new UsageError(`${path}: ${(error as Error).message}`);
  }
  try {
    const check = db.pragma('quick_check', { simple: true }) as string;
    if (check !== 'ok') throw new Error(`the SQLite integrity check failed: ${check}`);
    const version = db.prepare('SELECT max(version) FROM ferry_migrations').pluck().get();
    if (typeof version !== 'number') throw new Error('it has no applied migration');
    return version;
  } catch (error) {
    throw new UsageError(`${path} is not a Ferry backup: ${(error as Error).message}`);
  } finally {
    db.close();
  }
}

/**
 * Takes the lock a running Ferry holds on its database (database-lock.ts), so that no Ferry
 * starts on the data directory while the restore replaces its files; a UsageError when one runs.
 */
export function lockForRestore(path: string): DatabaseLock {
  try {
    return lockDatabase(path, 0);
  } catch (error) {
    if (!(error instanceof DatabaseInUseError)) throw error;
    throw new UsageError(`${path} is in use (is Ferry running on it? stop it first)`);
  }
}

/**
 * Throws when another process holds `path` itself with an exclusive lock, as a Ferry from before
 * the lock file did.
 */
function assertNotInUse(path: string): void {
  const db = new Database(path, { fileMustExist: true, timeout: 0 });
  try {
    db.pragma('schema_version');
  } catch (error) {
    throw new UsageError(
      `${path} is in use (is Ferry running on it? stop it first): ${(error as Error).message}`,
    );
  } finally {
    db.close();
  }
}

/** Puts the backup `source` in place of the database `target` (its lock held by the caller). */
export async function restoreInto(source: string, target: string, force: boolean): Promise<void> {
  if (existsSync(target)) {
    if (!force) throw new UsageError(`${target} exists; pass --force to replace it`);
    assertNotInUse(target);
  }
  // Copied next to the target, then renamed over it, so that a failure leaves the old
  // database whole. The old database's WAL must go with it: SQLite would apply it to the
  // new file at the next open.
  const partial = `${target}.restoring`;
  rmSync(partial, { force: true });
  const db = new Database(source, { readonly: true });
  try {
    await db.backup(partial);
  } finally {
    db.close();
  }
  chmodSync(partial, 0o600);
  for (const suffix of ['-wal', '-shm']) rmSync(`${target}${suffix}`, { force: true });
  renameSync(partial, target);
}
