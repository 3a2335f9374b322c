/**
 * One Ferry process per SQLite database file.
 *
 * Leases live in the owning process's memory (lease-table.ts), so a second process delivering
 * from the same file would deliver every message twice. The database itself cannot carry that
 * guarantee any more: Ferry opens it twice in one process (the main connection, and the
 * checkpoint thread's, see wal-checkpointer.ts), which `locking_mode=EXCLUSIVE` on it would forbid.
 *
 * So the guarantee is a lock of its own: a small SQLite database beside the data (`ferry.db-lock`)
 * opened with `locking_mode=EXCLUSIVE` and written once, which makes SQLite take the file's
 * exclusive POSIX lock and keep it until the connection closes. The operating system drops such
 * a lock when its process ends, however it ends (SIGKILL included), so a crashed Ferry never
 * leaves a stale lock behind, unlike a lock file that records a PID. SQLite also tracks its locks
 * per file within a process, so a second open in the same process (tests) is refused the same way.
 */
import { closeSync, existsSync, chmodSync, openSync } from 'node:fs';
import Database from 'better-sqlite3';

/**
 * The connections that hold locks, until released. A lock must not end because nothing refers
 * to its driver any more: better-sqlite3 closes a connection it garbage-collects. A child
 * process whose driver was referred to only by its finished script's scope lost the lock that
 * way in 3 of 60 runs (the second open was not refused), and none of 80 with this set.
 */
const held = new Set<Database.Database>();

/** A held lock on a database file; `release` lets the next process take it. */
export interface DatabaseLock {
  release(): void;
}

/** The lock file of the database at `path`: beside it, like SQLite's own `-wal` and `-shm`. */
export const lockFilePath = (path: string): string => `${path}-lock`;

/** Thrown when another process (or another open in this one) holds the database. */
export class DatabaseInUseError extends Error {
  constructor(path: string, options?: ErrorOptions) {
    super(
      `the database ${path} is in use by another Ferry process ` +
        '(one process per SQLite data directory; use PostgreSQL to run several nodes)',
      options,
    );
  }
}

export const isBusy = (error: unknown): boolean =>
  (error as { code?: unknown } | undefined)?.code?.toString().startsWith('SQLITE_BUSY') === true;

/**
 * Takes the lock of the database at `path`, waiting up to `busyTimeoutMs` for a process that is
 * stopping to let go of it; throws {@link DatabaseInUseError} when it is still held.
 */
export function lockDatabase(path: string, busyTimeoutMs: number): DatabaseLock {
  const file = lockFilePath(path);
  // Created owner-only like the database: it holds nothing, but it sits among files that do.
  if (!existsSync(file)) closeSync(openSync(file, 'a', 0o600));
  else chmodSync(file, 0o600);
  const db = new Database(file);
  try {
    db.pragma(`busy_timeout = ${busyTimeoutMs}`);
    db.pragma('locking_mode = EXCLUSIVE');
    // An empty exclusive transaction is enough: in EXCLUSIVE locking mode SQLite keeps the
    // exclusive lock it took for the transaction after the COMMIT, until close.
    db.exec('BEGIN EXCLUSIVE; COMMIT');
  } catch (error) {
    db.close();
    if (isBusy(error)) throw new DatabaseInUseError(path, { cause: error });
    throw error;
  }
  held.add(db);
  return {
    release: () => {
      held.delete(db);
      db.close();
    },
  };
}
