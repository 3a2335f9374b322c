/**
 * A FIFO async mutex. The SQLite driver has one connection, and better-sqlite3 runs statements
 * synchronously, but a transaction's callback is async: while it awaits, other code may issue
 * operations on the same connection. The lock keeps those outside the open transaction: they
 * queue until it ends instead of slipping in between its statements.
 *
 * `idle` lets the hot path skip the lock entirely (no promise, no queue) when nothing holds it.
 */
export class AsyncLock {
  private held = false;
  private readonly waiters: (() => void)[] = [];

  /** True when no one holds the lock and no one waits for it. */
  get idle(): boolean {
    return !this.held;
  }

  acquire(): Promise<void> {
    if (!this.held) {
      this.held = true;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Hands the lock to the next waiter (it stays held) or frees it. */
  release(): void {
    const next = this.waiters.shift();
    if (next) next();
    else this.held = false;
  }

  async runExclusive<T>(fn: () => T | Promise<T>): Promise<T> {
    await this.acquire();
    try {
      return await fn();
    } finally {
      this.release();
    }
  }
}
