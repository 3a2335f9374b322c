/**
 * A bound on how long a caller waits for the database. When the server stops answering (an
 * outage, a network partition, a frozen host), a query waits for TCP to give up, which takes
 * minutes; a request waiting on it would hang. Past the deadline the caller gets a
 * {@link StorageNoAnswerError} instead, which the API answers `503` with `Retry-After`.
 *
 * The error says what became of the work, because a client retries on a 503:
 * - `applied: 'no'`: a read, or a transaction whose COMMIT was never sent. Ferry makes sure it
 *   never is (the transaction rolls back when its work finishes late), so "nothing was stored"
 *   is true.
 * - `applied: 'unknown'`: a COMMIT (or a single write outside a transaction) was sent and its
 *   answer never came, because the deadline passed or the connection was lost. It may have been
 *   applied; the answer says so rather than claim it was not.
 */
export type AppliedOutcome = 'no' | 'unknown';

/** The `code` of a {@link StorageNoAnswerError}, read by the API's error mapping. */
export const STORAGE_NO_ANSWER = 'STORAGE_NO_ANSWER';

export class StorageNoAnswerError extends Error {
  readonly code = STORAGE_NO_ANSWER;
  constructor(
    readonly applied: AppliedOutcome,
    /** What happened: `did not answer within 5000 ms`, `lost the connection during a commit`. */
    what: string,
    options?: { cause: unknown },
  ) {
    super(
      `storage ${what}; ${applied === 'no' ? 'nothing was written' : 'the write may have been applied'}`,
      options,
    );
    this.name = 'StorageNoAnswerError';
  }
}

/** Hooks a transaction calls so the deadline knows whether its COMMIT may have been sent. */
export interface CommitGuard {
  /** Call when the transaction's work starts; throws if the deadline has passed already. */
  started(): void;
  /**
   * Call when the work is done, just before the COMMIT goes out; throws (so the transaction rolls
   * back instead) if the deadline has passed meanwhile.
   */
  committing(): void;
}

/**
 * Races work against a timer. The work itself is not cancelled (the driver has no way to stop a
 * query the server does not answer); its late result or error is ignored.
 */
export class Deadline {
  constructor(readonly timeoutMs: number) {}

  /**
   * A single operation: past the deadline, a write's outcome is unknown (`read: false`); a read
   * wrote nothing (`read: true`).
   */
  operation<T>(work: Promise<T>, read: boolean): Promise<T> {
    return this.race(work, () => this.timedOut(read ? 'no' : 'unknown'));
  }

  /**
   * A transaction: `run` starts it and calls the guard's hooks. Past the deadline before
   * `committing()`, the transaction can no longer commit (`applied: 'no'`); after it, the COMMIT
   * may have reached the server (`applied: 'unknown'`). An error after `committing()` for which
   * `lostConnection` is true (the connection broke before COMMIT's answer) is unknown too.
   */
  transaction<T>(
    run: (guard: CommitGuard) => Promise<T>,
    lostConnection: (error: unknown) => boolean,
  ): Promise<T> {
    let state: 'running' | 'committing' | 'abandoned' = 'running';
    const abandoned = (): StorageNoAnswerError => this.timedOut('no');
    const work = run({
      started() {
        if (state === 'abandoned') throw abandoned();
      },
      committing() {
        if (state === 'abandoned') throw abandoned();
        state = 'committing';
      },
    }).catch((error: unknown) => {
      if (state === 'committing' && lostConnection(error)) {
        throw new StorageNoAnswerError('unknown', 'lost the connection during a commit', {
          cause: error,
        });
      }
      throw error;
    });
    return this.race(work, () => {
      const applied = state === 'committing' ? 'unknown' : 'no';
      state = 'abandoned';
      return this.timedOut(applied);
    });
  }

  private timedOut(applied: AppliedOutcome): StorageNoAnswerError {
    return new StorageNoAnswerError(applied, `did not answer within ${this.timeoutMs} ms`);
  }

  /**
   * Work not settled yet, oldest first. Every entry waits the same `timeoutMs` (on the monotonic
   * clock, as timers do), so insertion order is expiry order and one timer, set for the oldest
   * entry, serves them all. Written by
   * hand instead of a timer per operation: on PostgreSQL every statement passes here, and a
   * `setTimeout` plus `clearTimeout` each was measurable garbage (about 1 KB per statement at
   * 500 msg/s, docs/benchmarks-log.md).
   */
  private readonly waiting = new Set<Waiting>();
  private timer: NodeJS.Timeout | undefined;

  private race<T>(work: Promise<T>, onTimeout: () => Error): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const entry: Waiting = {
        expires: performance.now() + this.timeoutMs,
        fail: () => reject(onTimeout()),
      };
      this.waiting.add(entry);
      this.timer ??= later(this.expire, this.timeoutMs);
      work.then(
        (value) => {
          this.waiting.delete(entry);
          resolve(value);
        },
        (error: unknown) => {
          this.waiting.delete(entry);
          // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- passed on as the work rejected
          reject(error);
        },
      );
    });
  }

  /** Fails the entries past their time, then waits for the oldest left, if any. */
  private readonly expire = (): void => {
    this.timer = undefined;
    const now = performance.now();
    for (const entry of this.waiting) {
      if (entry.expires > now) {
        this.timer = later(this.expire, entry.expires - now);
        return;
      }
      this.waiting.delete(entry);
      entry.fail();
    }
  };
}

/**
 * Unreferenced: the timer stays armed after the last work settles (until its time, then it finds
 * nothing), and must not keep the process alive meanwhile; work waiting on the database does,
 * through its connection.
 */
const later = (fn: () => void, ms: number): NodeJS.Timeout => setTimeout(fn, ms).unref();

interface Waiting {
  expires: number;
  fail: () => void;
}
