/**
 * Durable commits without blocking the event loop.
 *
 * With `synchronous=FULL`, SQLite fsyncs the WAL inside every COMMIT, and better-sqlite3 runs
 * COMMIT on the main thread: the whole process stalls for each fsync (measured here at 2–3 ms),
 * so requests that arrive meanwhile cannot even be parsed, and group commit cannot form batches.
 *
 * Instead the connection runs with `synchronous=NORMAL` (in WAL mode: no fsync at commit; the
 * WAL is synced before each checkpoint and the database after it), and this class fsyncs the WAL
 * file on libuv's thread pool before a write is reported committed. The guarantee is the same as
 * FULL (nothing is acknowledged before its WAL frames are on disk), while the event loop keeps
 * serving requests. One fsync covers every commit made before it started, so concurrent callers
 * share fsyncs: a caller whose commit happened while an fsync was running waits for the next one.
 */
import { closeSync, fdatasync, openSync } from 'node:fs';

export class WalSync {
  private fd: number | undefined;
  private running: Promise<void> | undefined;
  private queued: Promise<void> | undefined;

  constructor(private readonly walPath: string) {}

  /** Resolves once every commit made before this call is on disk. */
  sync(): Promise<void> {
    if (!this.running) return this.start();
    // The running fsync may have started before the caller's commit: wait for a fresh one.
    this.queued ??= this.running.then(
      () => this.startQueued(),
      () => this.startQueued(),
    );
    return this.queued;
  }

  /** Waits for fsyncs in flight (their callers are owed an answer), then closes the file. */
  async close(): Promise<void> {
    while (this.running ?? this.queued) {
      await (this.queued ?? this.running)?.catch(() => undefined);
    }
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }

  private startQueued(): Promise<void> {
    this.queued = undefined;
    return this.start();
  }

  private start(): Promise<void> {
    const run = new Promise<void>((resolve, reject) => {
      // The WAL file exists from the first commit on and keeps its inode while the connection
      // is open: SQLite rewinds it after a checkpoint (on the checkpoint thread's connection too)
      // and cuts it to journal_size_limit in place, never replacing it. A checkpoint fsyncs
      // what it copies before a writer may overwrite those frames, so a rewind loses nothing
      // that this fsync was to cover.
      this.fd ??= openSync(this.walPath, 'r+');
      fdatasync(this.fd, (error) => (error ? reject(error) : resolve()));
    });
    const tracked = run.finally(() => {
      if (this.running === tracked) this.running = undefined;
    });
    this.running = tracked;
    return tracked;
  }
}
