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
   * Runs `fn` atomically: in `BEGIN IMMEDIATE` … `COMMIT` (the write lock is taken up front, so
   * another process waits on busy_timeout instead of failing on a lock upgrade), or in a
   * SAVEPOINT when a transaction is already open. Like better-sqlite3's `db.transaction()`, but
   * without building wrapper functions on every call of the hot path.
   */
  atomic<T>(fn: () => T): T {
    const nested = this.db.inTransaction;
    this.get(nested ? 'SAVEPOINT ferry_op' : 'BEGIN IMMEDIATE').run();
    try {
      const result = fn();
      this.get(nested ? 'RELEASE ferry_op' : 'COMMIT').run();
      return result;
    } catch (error) {
      if (this.db.inTransaction) {
        if (nested) {
          this.get('ROLLBACK TO ferry_op').run();
          this.get('RELEASE ferry_op').run();
        } else {
          this.get('ROLLBACK').run();
        }
      }
      throw error;
    }
  }
}
