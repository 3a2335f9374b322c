/**
 * Prepared statements of one connection, cached by SQL text, and the atomic wrapper that the
 * multi-statement operations use.
 */
import type Database from 'better-sqlite3';

export type Statement = Database.Statement<unknown[], unknown>;

/** How many filter-shaped statements stay prepared. */
const DYNAMIC_CACHE_SIZE = 200;

export class SqliteStatements {
  /** Fixed SQL texts: a bounded set, kept for the connection's life. */
  private readonly fixed = new Map<string, Statement>();
  /** SQL texts that vary with a filter's shape: least recently used ones are dropped. */
  private readonly dynamic = new Map<string, Statement>();

  constructor(private readonly db: Database.Database) {}

  /** A statement whose SQL text is one of a fixed set (no filter-dependent parts). */
  get(sql: string): Statement {
    let statement = this.fixed.get(sql);
    if (!statement) {
      statement = this.db.prepare(sql);
      this.fixed.set(sql, statement);
    }
    return statement;
  }

  /** A statement whose SQL text depends on a filter, from a bounded LRU cache. */
  getDynamic(sql: string): Statement {
    let statement = this.dynamic.get(sql);
    if (statement) {
      this.dynamic.delete(sql); // re-inserted below as the most recently used
    } else {
      statement = this.db.prepare(sql);
      if (this.dynamic.size >= DYNAMIC_CACHE_SIZE) {
        const oldest = this.dynamic.keys().next();
        if (!oldest.done) this.dynamic.delete(oldest.value);
      }
    }
    this.dynamic.set(sql, statement);
    return statement;
  }

  /**
   * The error that left the open transaction with part of an operation's writes (see
   * {@link atomic}), boxed so that any thrown value fits; undefined while the transaction is sound.
   */
  private failure: { error: unknown } | undefined;
  /** `SELECT total_changes()`, prepared at its first use. */
  private changes: Statement | undefined;

  /**
   * Runs `fn` atomically. Outside a transaction: in `BEGIN IMMEDIATE` … `COMMIT` (the write lock
   * is taken up front, so another process waits on busy_timeout instead of failing on a lock
   * upgrade). Like better-sqlite3's `db.transaction()`, but without building wrapper functions on
   * every call of the hot path.
   *
   * Inside a transaction, `fn` runs directly, in no SAVEPOINT. A savepoint makes SQLite copy
   * each page `fn` changes into a sub-journal, and one holding more than 64 KiB goes to a
   * temporary file: with a savepoint per operation, the end-to-end benchmark wrote 1.85 GB to
   * such files for 20,000 messages, 45 write calls per message (docs/benchmarks-log.md). Without
   * one, an `fn` that throws after writing leaves those writes in the transaction, so the
   * transaction is then failed, as PostgreSQL fails one after an error: every later operation
   * in it throws, and it can only roll back, whole or to a savepoint taken before (see
   * {@link assertSound}). An `fn` that throws before writing anything leaves it sound.
   */
  atomic<T>(fn: () => T): T {
    if (this.db.inTransaction) {
      const before = this.totalChanges();
      try {
        return fn();
      } catch (error) {
        if (this.db.inTransaction && this.totalChanges() !== before) this.fail(error);
        throw error;
      }
    }
    this.get('BEGIN IMMEDIATE').run();
    try {
      const result = fn();
      this.get('COMMIT').run();
      return result;
    } catch (error) {
      if (this.db.inTransaction) this.get('ROLLBACK').run();
      throw error;
    } finally {
      this.recover();
    }
  }

  /** Throws when an operation failed midway in the open transaction (see {@link atomic}). */
  assertSound(): void {
    if (this.failure === undefined) return;
    throw new Error('an earlier operation of this transaction failed; it can only roll back', {
      cause: this.failure.error,
    });
  }

  /** The transaction (or the savepoint that held the failure) rolled back: sound again. */
  recover(): void {
    this.failure = undefined;
  }

  private fail(error: unknown): void {
    this.failure ??= { error };
  }

  private totalChanges(): number {
    this.changes ??= this.db.prepare('SELECT total_changes()').pluck();
    return this.changes.get() as number;
  }
}
