/**
 * The embedded storage driver: one better-sqlite3 connection per process for every statement
 * (plus a checkpoint thread's, see wal-checkpointer.ts), WAL journal, and full durability by
 * default so that a commit (and so a publish acknowledgement) is on disk.
 *
 * See `sqlite-executor.ts` for how the async contract runs on the synchronous binding, and
 * `sqlite-ops.ts` for the SQL.
 */
import { chmodSync, closeSync, existsSync, openSync } from 'node:fs';
import Database from 'better-sqlite3';
import type { Driver, Executor, MigrationStatus } from '../driver.js';
import {
  listMigrationFiles,
  migrationStatusOf,
  readMigrationFile,
  refuseNewerSchema,
} from '../migrate-files.js';
import { AsyncLock } from './async-lock.js';
import { RootScope, SqliteExecutor } from './sqlite-executor.js';
import { WalSync } from './wal-sync.js';
import { SqliteOps } from './sqlite-ops.js';
import { DatabaseInUseError, isBusy, lockDatabase, type DatabaseLock } from './database-lock.js';
import {
  DEFAULT_CHECKPOINT_LIMITS,
  WalCheckpointer,
  type CheckpointEvent,
  type CheckpointLimits,
} from './wal-checkpointer.js';

export interface SqliteDriverOptions {
  /** Database file path, or `':memory:'` for a private in-memory database (tests). The parent
   * folder must exist; the file is created when missing. */
  path: string;
  /**
   * `full` (default): every commit is fsynced, so an acknowledged publish survives power loss.
   * `normal`: in WAL mode, commits are fsynced only at checkpoints: roughly three times the
   * single-commit rate, but the last commits before a power loss (not a process crash) can be
   * lost.
   */
  synchronous?: 'full' | 'normal';
  /**
   * Called with the text of every statement run (diagnostics and the query plan test, which
   * asks SQLite for the plan of what the driver really runs).
   */
  trace?: (text: string) => void;
  /**
   * Largest size of the database file, bytes (SQLite's `max_page_count`, rounded down to whole
   * pages). A write that would grow the file past it fails with `SQLITE_FULL`, as on a full disk,
   * and its transaction rolls back. Lets an operator cap Ferry's disk use, and lets the tests
   * fill "the disk" without a small filesystem. Absent: no limit but the disk's.
   */
  maxSizeBytes?: number;
  /** Called after each WAL checkpoint the checkpoint thread runs (tests, diagnostics). */
  onCheckpoint?: (event: CheckpointEvent) => void;
  /** When checkpoints run; the defaults suit production (tests make them smaller). */
  checkpointLimits?: CheckpointLimits;
}

/** The connection settings in effect, read back from SQLite (for the start banner and tests). */
export interface SqliteSettings {
  /** `wal` for a file, `memory` for `:memory:`. */
  journalMode: string;
  synchronous: 'off' | 'normal' | 'full' | 'extra';
  /** `async`: commits are made durable by a thread-pool fsync of the WAL (see wal-sync.ts). */
  walFsync: 'async' | 'none';
  busyTimeoutMs: number;
}

export interface SqliteDriver extends Driver {
  readonly name: 'sqlite';
  settings(): SqliteSettings;
}

/**
 * How long a statement waits for another connection's write lock before failing with
 * SQLITE_BUSY. The checkpoint thread never takes it while a statement could run (its RESTART
 * runs with the transaction lock held), so only another process (a tool on the same file) can.
 */
const BUSY_TIMEOUT_MS = 5_000;

/** How long opening waits for another process's lock before reporting the file is in use. */
const OPEN_BUSY_TIMEOUT_MS = 1_000;

/**
 * How long the checkpoint thread's RESTART waits for readers of the WAL: the transaction lock is
 * held meanwhile, so every storage operation queues. Ferry's own reads (a backup's step) last
 * milliseconds; a long read by an outside tool makes it give up instead (SQLite then reports the
 * checkpoint busy; the next round tries again).
 */
const CHECKPOINT_BUSY_TIMEOUT_MS = 100;

/** Bytes before each page in the WAL file. */
const WAL_FRAME_HEADER_BYTES = 24;

/** Pages a backup copies per event-loop turn: 4 MiB at the default page size, a few ms. */
const BACKUP_PAGES_PER_STEP = 1_024;

const MIGRATIONS_DIR = new URL('./migrations/', import.meta.url);

const SYNCHRONOUS_NAMES = ['off', 'normal', 'full', 'extra'] as const;

/**
 * Makes the database file, and the `-wal` and `-shm` files beside it, readable by their owner
 * only (0600): they hold every message and the accounts' key material. The file is created
 * 0600 before SQLite opens it, and SQLite creates `-wal`/`-shm` with the database file's mode;
 * files from an earlier version (created 0644) are tightened here. (The `-lock` file is
 * database-lock.ts's.)
 */
function restrictDatabaseFiles(path: string): void {
  closeSync(openSync(path, 'a', 0o600));
  for (const file of [path, `${path}-wal`, `${path}-shm`]) {
    if (existsSync(file)) chmodSync(file, 0o600);
  }
}

export function openSqliteDriver(options: SqliteDriverOptions): SqliteDriver {
  const onDisk = options.path !== ':memory:' && options.path !== '';
  if (!onDisk) return new SqliteDriverImpl(openConnection(options, false), {});
  // One process per database file (see database-lock.ts), taken before the file is touched.
  const lock = lockDatabase(options.path, OPEN_BUSY_TIMEOUT_MS);
  try {
    restrictDatabaseFiles(options.path);
    const db = openConnection(options, true);
    // `full` on a file is NORMAL plus an asynchronous fsync of the WAL before each write is
    // reported committed (see wal-sync.ts): FULL's guarantee without stalling the event loop.
    const walSync =
      options.synchronous !== 'normal' ? new WalSync(`${options.path}-wal`) : undefined;
    return new SqliteDriverImpl(db, { lock, walSync, checkpoints: options });
  } catch (error) {
    lock.release();
    throw error;
  }
}

/** The main connection, with Ferry's settings. */
function openConnection(options: SqliteDriverOptions, onDisk: boolean): Database.Database {
  const trace = options.trace;
  const db = new Database(options.path, trace ? { verbose: (text) => trace(String(text)) } : {});
  try {
    if (onDisk) {
      db.pragma(`busy_timeout = ${OPEN_BUSY_TIMEOUT_MS}`);
      try {
        db.pragma('journal_mode = WAL');
      } catch (error) {
        // A Ferry from before the lock file holds the database itself with an exclusive lock.
        if (isBusy(error)) throw new DatabaseInUseError(options.path, { cause: error });
        throw error;
      }
      // Checkpoints run on their own thread (wal-checkpointer.ts), never inside a commit here.
      db.pragma('wal_autocheckpoint = 0');
      // The WAL file is cut back to this size when it starts over (wal-checkpointer.ts).
      const limits = options.checkpointLimits ?? DEFAULT_CHECKPOINT_LIMITS;
      const pageSize = db.pragma('page_size', { simple: true }) as number;
      db.pragma(`journal_size_limit = ${limits.limitFrames * (pageSize + WAL_FRAME_HEADER_BYTES)}`);
    }
    db.pragma(`synchronous = ${onDisk || options.synchronous === 'normal' ? 'NORMAL' : 'FULL'}`);
    db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
    // The label filter uses LIKE (see sql/filter.ts). SQLite's LIKE ignores ASCII case by
    // default, PostgreSQL's does not; labels, like every other filter field, match exactly.
    db.pragma('case_sensitive_like = ON');
    if (options.maxSizeBytes !== undefined) {
      const pageSize = db.pragma('page_size', { simple: true }) as number;
      // SQLite keeps the current page count if the file is already larger than the limit.
      db.pragma(`max_page_count = ${Math.max(1, Math.floor(options.maxSizeBytes / pageSize))}`);
    }
  } catch (error) {
    db.close();
    throw error;
  }
  return db;
}

/** What a database file has beside its main connection (none in memory). */
interface FileResources {
  lock?: DatabaseLock;
  walSync?: WalSync;
  /** The settings of the checkpoint thread. */
  checkpoints?: Pick<SqliteDriverOptions, 'path' | 'onCheckpoint' | 'checkpointLimits'>;
}

class SqliteDriverImpl implements SqliteDriver {
  readonly name = 'sqlite' as const;
  readonly executor: Executor;
  private readonly root: RootScope;
  private closing: Promise<void> | undefined;

  private readonly walSync: WalSync | undefined;

  constructor(
    private readonly db: Database.Database,
    private readonly resources: FileResources,
  ) {
    const ops = new SqliteOps(db);
    this.walSync = resources.walSync;
    const checkpoints = resources.checkpoints;
    const checkpointer =
      checkpoints &&
      new WalCheckpointer({
        path: checkpoints.path,
        db,
        alone: (fn) => this.root.exclusive(fn),
        busyTimeoutMs: CHECKPOINT_BUSY_TIMEOUT_MS,
        limits: checkpoints.checkpointLimits,
        onCheckpoint: checkpoints.onCheckpoint,
      });
    this.root = new RootScope(db, ops, new AsyncLock(), this.walSync, checkpointer);
    this.executor = new SqliteExecutor(ops, this.root);
  }

  migrate(): Promise<void> {
    return this.root.exclusive(() => migrateSync(this.db));
  }

  /**
   * A read on the connection, without the transaction lock: it sees what is committed (or what
   * the open transaction wrote) and needs no ordering with writes.
   */
  migrationStatus(): Promise<MigrationStatus> {
    return Promise.resolve().then(() => {
      const table = this.db
        .prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'ferry_migrations'")
        .get();
      const applied = table
        ? (this.db.prepare('SELECT version FROM ferry_migrations').pluck().all() as number[])
        : [];
      return migrationStatusOf(listMigrationFiles(MIGRATIONS_DIR), applied);
    });
  }

  /**
   * Never calls back. One process owns a SQLite file, and the engine is woken in-process by the
   * publisher; PostgreSQL, shared by many nodes, uses LISTEN/NOTIFY here instead.
   */
  listenWake(_onWake: (dueAt: number | undefined) => void): Promise<() => Promise<void>> {
    return Promise.resolve(() => Promise.resolve());
  }

  /** A no-op, for the same reason as `listenWake`. */
  notifyWake(_dueAt?: number): Promise<void> {
    return Promise.resolve();
  }

  settings(): SqliteSettings {
    const synchronous = this.db.pragma('synchronous', { simple: true }) as number;
    return {
      journalMode: String(this.db.pragma('journal_mode', { simple: true })),
      // The effective durability: NORMAL plus the WAL fsync before acknowledging is FULL's.
      synchronous: this.walSync ? 'full' : (SYNCHRONOUS_NAMES[synchronous] ?? 'full'),
      walFsync: this.walSync ? 'async' : 'none',
      busyTimeoutMs: Number(this.db.pragma('busy_timeout', { simple: true })),
    };
  }

  storageFull(): boolean {
    return this.root.full;
  }

  /**
   * SQLite's online backup API (better-sqlite3's `backup()`), on the main connection, the one
   * every write goes through. The copy goes {@link BACKUP_PAGES_PER_STEP} pages per event-loop
   * turn, so deliveries and publishes go on between steps. A step that finds a transaction open
   * on the connection is retried at the next turn (SQLITE_BUSY), and a page this connection
   * writes during the backup is written to the copy too (SQLite does this for writes through the
   * backup's own source connection), so the copy is the database as it is when the last step
   * ends: every transaction that committed before then, none in part. The checkpoint thread's
   * copies from the WAL into the file change no page's content, so they do not restart the copy.
   */
  async backup(path: string): Promise<void> {
    await this.db.backup(path, { progress: () => BACKUP_PAGES_PER_STEP });
  }

  close(): Promise<void> {
    // The lock goes last: the next process may open the file once nothing here uses it.
    this.closing ??= this.root.close().finally(() => this.resources.lock?.release());
    return this.closing;
  }
}

const CREATE_MIGRATIONS_TABLE =
  'CREATE TABLE IF NOT EXISTS ferry_migrations ' +
  '(version INTEGER PRIMARY KEY, name TEXT, applied_at INTEGER)';

/**
 * Applies each pending migration in its own `BEGIN IMMEDIATE` transaction, which takes the
 * database's write lock before reading what is applied: a second process migrating the same file
 * waits (busy_timeout), then finds the version recorded and skips it. (PostgreSQL takes an
 * advisory lock instead.) Migration files must not contain transaction statements.
 */
function migrateSync(db: Database.Database): void {
  const files = listMigrationFiles(MIGRATIONS_DIR);
  const applied = inWriteTransaction(db, () => {
    db.exec(CREATE_MIGRATIONS_TABLE);
    return new Set(db.prepare('SELECT version FROM ferry_migrations').pluck().all() as number[]);
  });
  refuseNewerSchema(files, applied, 'data directory');
  for (const file of files) {
    if (applied.has(file.version)) continue;
    const sql = readMigrationFile(file);
    inWriteTransaction(db, () => {
      const done = db.prepare('SELECT 1 FROM ferry_migrations WHERE version = ?').get(file.version);
      if (done) return; // another process applied it meanwhile
      db.exec(sql);
      // applied_at is bookkeeping for operators, not logic a test controls: the wall clock is fine.
      db.prepare('INSERT INTO ferry_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(
        file.version,
        file.name,
        Date.now(),
      );
    });
  }
}

function inWriteTransaction<T>(db: Database.Database, fn: () => T): T {
  db.exec('BEGIN IMMEDIATE');
  try {
    const result = fn();
    db.exec('COMMIT');
    return result;
  } catch (error) {
    if (db.inTransaction) db.exec('ROLLBACK');
    throw error;
  }
}
