/**
 * Group commit: callers add items and get a promise; items that arrive while earlier batches are
 * being written go together into the next batch. Used for publishes (answer only after commit)
 * and for delivery outcomes.
 *
 * Two details carry the throughput:
 * - a batch starts on `setImmediate`, after the event loop's I/O phase, so every request that
 *   has arrived is parsed and joins it;
 * - up to `maxInFlight` batches run at once. A transaction reports success only after its fsync
 *   (SQLite: WalSync; PostgreSQL: COMMIT), so with one batch at a time the writer would idle
 *   during every fsync. With several, the next batch commits while the previous one syncs, and
 *   on SQLite concurrent fsyncs coalesce into one.
 */
export interface GroupCommitOptions<T, R> {
  /** Writes a batch; resolves with one result per item, in order. */
  commit: (items: T[]) => Promise<R[]>;
  /** Largest batch, counted with `weight` (default: 1 per item). */
  maxBatch: number;
  /** Batches in flight at once. */
  maxInFlight: number;
  weight?: (item: T) => number;
  /**
   * Wait this long before starting a batch (default 0: the next turn of the event loop). For
   * writes nobody waits on, a few ms turn many tiny commits into one at low rates.
   */
  lingerMs?: number;
}

interface Waiting<T, R> {
  item: T;
  resolve: (result: R) => void;
  reject: (error: unknown) => void;
}

export class GroupCommit<T, R> {
  private readonly queue: Waiting<T, R>[] = [];
  private inFlight = 0;
  private scheduled = false;
  private idleWaiters: (() => void)[] = [];

  constructor(private readonly options: GroupCommitOptions<T, R>) {}

  add(item: T): Promise<R> {
    return new Promise((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      this.schedule();
    });
  }

  /** Resolves when everything added so far is written (or failed). */
  drain(): Promise<void> {
    if (this.queue.length === 0 && this.inFlight === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private schedule(): void {
    if (this.scheduled || this.queue.length === 0 || this.inFlight >= this.options.maxInFlight) {
      return;
    }
    this.scheduled = true;
    const start = (): void => {
      this.scheduled = false;
      this.startBatch();
    };
    if (this.options.lingerMs) setTimeout(start, this.options.lingerMs);
    else setImmediate(start);
  }

  private startBatch(): void {
    if (this.queue.length === 0 || this.inFlight >= this.options.maxInFlight) return;
    const weight = this.options.weight ?? (() => 1);
    const batch: Waiting<T, R>[] = [];
    let size = 0;
    while (this.queue.length > 0 && (batch.length === 0 || size < this.options.maxBatch)) {
      const next = this.queue.shift() as Waiting<T, R>;
      batch.push(next);
      size += weight(next.item);
    }
    this.inFlight++;
    this.options
      .commit(batch.map((w) => w.item))
      .then(
        (results) => batch.forEach((w, i) => w.resolve(results[i] as R)),
        (error: unknown) => batch.forEach((w) => w.reject(error)),
      )
      .finally(() => {
        this.inFlight--;
        this.schedule();
        if (this.queue.length === 0 && this.inFlight === 0) {
          const waiters = this.idleWaiters;
          this.idleWaiters = [];
          for (const resolve of waiters) resolve();
        }
      });
    this.schedule(); // more may be queued already: start the next batch too
  }
}
