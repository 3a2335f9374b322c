/**
 * SQLite's WAL checkpoints, run on a thread of their own.
 *
 * SQLite checkpoints automatically inside the commit that grows the WAL past 1,000 pages: that
 * commit copies the WAL's pages into the database file and fsyncs both, on the connection's
 * thread, which for Ferry is the main thread. It held the event loop for 10–100 ms (publishes,
 * claims and `/health` waited behind it; see docs/benchmarks-log.md). So the main connection runs with
 * `wal_autocheckpoint=0`, and a worker thread with a second connection to the same file does the
 * checkpoints (wal-checkpoint-worker.ts).
 *
 * The main thread's cost per commit is one `PRAGMA wal_checkpoint(NOOP)`, which reads the WAL's
 * frame counts from shared memory and does nothing else (about 1.5 µs). When at least
 * {@link CheckpointLimits.startFrames} frames wait to be copied, it asks the worker for a PASSIVE
 * checkpoint: that copies what is committed without taking the write lock, so commits go on.
 *
 * What a passive checkpoint cannot do is reset the WAL. The next writer starts over at the WAL's
 * beginning only if every frame was copied before its transaction began, and under continuous
 * commits each pass ends with the frames committed during it still to copy: the WAL would grow
 * without end. So once it passes {@link CheckpointLimits.limitFrames}, the checkpointer runs more
 * passive passes until little is left to copy, then takes the driver's transaction lock (an async
 * lock: the event loop keeps running, only storage operations queue) and has the worker run a
 * RESTART checkpoint. With no transaction open, nothing competes with it: it copies the remaining
 * frames, fsyncs the database, and the next commit starts the WAL over. RESTART, not TRUNCATE:
 * the WAL keeps its size on disk (at most about the limit), so commits after the reset overwrite
 * blocks the file already has and their fdatasync has no size change to write. The main
 * connection's `journal_size_limit` cuts a WAL that outgrew the limit (a burst) back to it at that
 * reset. A `busy_timeout`-style wait on the main thread would have been simpler (the worker
 * taking the write lock itself), but it sleeps the event loop, which is what this file removes.
 *
 * Durability is SQLite's own: a checkpoint fsyncs the WAL before copying from it and the database
 * file before it marks frames copied, so a writer overwrites only frames that are in the synced
 * database. Acknowledgements still wait for `WalSync`'s fdatasync of the WAL, which SQLite keeps
 * as one file (same inode) across resets.
 *
 * The worker starts at the first checkpoint, not at open: most databases a test opens never need
 * one, and a thread takes tens of milliseconds to start (the WAL grows meanwhile, once).
 */
import { Worker } from 'node:worker_threads';
import type Database from 'better-sqlite3';
import { workerScript } from '../../worker-script.js';

export type CheckpointMode = 'passive' | 'restart';

/** The WAL's frame counts, as SQLite's `wal_checkpoint` reports them. */
export interface WalFrames {
  /** Frames in the WAL (since its last reset). */
  logFrames: number;
  /** Of those, frames already copied into the database file. */
  checkpointedFrames: number;
}

export interface CheckpointLimits {
  /** Frames waiting to be copied that start a checkpoint (SQLite's own automatic default). */
  startFrames: number;
  /** WAL size, frames, past which the checkpointer resets it with a RESTART checkpoint. */
  limitFrames: number;
  /** Frames left to copy under which that RESTART runs (it holds writes while it copies them). */
  residueFrames: number;
  /** Passive passes before the RESTART runs anyway (commits outpacing the copies). */
  maxPasses: number;
}

/**
 * 1,000 frames is SQLite's automatic checkpoint; 4,096 frames (16 MiB at the default 4 KiB page)
 * fill one of the WAL index's hash tables, so lookups stay one table deep; a RESTART that copies
 * at most 256 frames (1 MiB) holds writes for about a millisecond plus the database's fsync.
 */
export const DEFAULT_CHECKPOINT_LIMITS: CheckpointLimits = {
  startFrames: 1_000,
  limitFrames: 4_096,
  residueFrames: 256,
  maxPasses: 4,
};

/**
 * What to run next, given the WAL now and the passive passes already run in this round (0: a
 * commit just happened). `undefined`: nothing (the round ends).
 */
export function nextCheckpoint(
  wal: WalFrames,
  passes: number,
  limits: CheckpointLimits,
): CheckpointMode | undefined {
  const pending = wal.logFrames - wal.checkpointedFrames;
  // Everything copied: the next commit resets the WAL by itself.
  if (pending <= 0) return undefined;
  const overLimit = wal.logFrames >= limits.limitFrames;
  if (passes === 0) return pending >= limits.startFrames || overLimit ? 'passive' : undefined;
  if (!overLimit) return undefined; // the pass copied what it found; later commits start another
  return pending > limits.residueFrames && passes < limits.maxPasses ? 'passive' : 'restart';
}

export interface CheckpointWorkerData {
  path: string;
  busyTimeoutMs: number;
}

export type CheckpointerToWorker = { type: 'checkpoint'; mode: CheckpointMode } | { type: 'close' };

export type CheckpointerToMain =
  | {
      type: 'done';
      mode: CheckpointMode;
      /** SQLite could not copy every frame (a reader, another checkpointer, the write lock). */
      busy: boolean;
      /** How long the checkpoint took on the worker. */
      ms: number;
      /** The WAL right after the checkpoint, frames committed during it included. */
      wal: WalFrames;
    }
  | { type: 'failed'; mode: CheckpointMode; error: string };

/** What one checkpoint did: reported to {@link WalCheckpointerOptions.onCheckpoint}. */
export type CheckpointEvent = CheckpointerToMain;

export interface WalCheckpointerOptions {
  /** The database file. */
  path: string;
  /** The main connection, in WAL mode with `wal_autocheckpoint=0`: reads the frame counts. */
  db: Database.Database;
  /** Runs `fn` while no statement runs and no transaction is open on the main connection. */
  alone: <T>(fn: () => Promise<T>) => Promise<T>;
  /** How long the worker's RESTART waits for readers of the WAL (a backup's step), ms. */
  busyTimeoutMs: number;
  limits?: CheckpointLimits;
  /** Called after each checkpoint (tests, diagnostics). */
  onCheckpoint?: (event: CheckpointEvent) => void;
}

export class WalCheckpointer {
  private readonly limits: CheckpointLimits;
  private readonly frames: Database.Statement;
  private worker: Worker | undefined;
  /** The request awaiting the worker's answer (one at a time). */
  private waiting:
    { mode: CheckpointMode; resolve: (event: CheckpointerToMain) => void } | undefined;
  private running = false;
  private closed = false;
  /**
   * The WAL's size when a round last failed (a full disk, say): the next round waits until
   * {@link CheckpointLimits.startFrames} more frames, not the next commit, so that a lasting
   * failure is reported now and then, not at every commit.
   */
  private failedAtFrames: number | undefined;

  constructor(private readonly options: WalCheckpointerOptions) {
    this.limits = options.limits ?? DEFAULT_CHECKPOINT_LIMITS;
    this.frames = options.db.prepare('PRAGMA wal_checkpoint(NOOP)').raw();
  }

  /**
   * Called after each commit, outside any transaction: starts a round of checkpoints when the
   * WAL has grown. Cheap: a flag while a round runs, else one NOOP checkpoint.
   */
  committed(): void {
    if (this.running || this.closed || this.options.db.inTransaction) return;
    let wal: WalFrames;
    try {
      const [, logFrames = 0, checkpointedFrames = 0] = this.frames.get() as number[];
      wal = { logFrames, checkpointedFrames };
    } catch (error) {
      // Never the commit's failure: it is done. The next commit reads the counts again.
      this.options.onCheckpoint?.({ type: 'failed', mode: 'passive', error: String(error) });
      return;
    }
    const failedAt = this.failedAtFrames;
    if (failedAt !== undefined && wal.logFrames >= failedAt) {
      if (wal.logFrames < failedAt + this.limits.startFrames) return;
    }
    const mode = nextCheckpoint(wal, 0, this.limits);
    if (mode) void this.round(mode, wal.logFrames);
  }

  /** Stops the worker after the checkpoint it runs, closing its connection. */
  async close(): Promise<void> {
    this.closed = true;
    const worker = this.worker;
    if (!worker) return;
    const exited = new Promise((resolve) => worker.once('exit', resolve));
    worker.ref(); // the wait for the thread to close its connection keeps the process alive
    worker.postMessage({ type: 'close' } satisfies CheckpointerToWorker);
    await exited;
  }

  /** Runs checkpoints until {@link nextCheckpoint} says the WAL needs no more for now. */
  private async round(first: CheckpointMode, logFrames: number): Promise<void> {
    this.running = true;
    this.failedAtFrames = logFrames; // until a checkpoint succeeds
    let mode: CheckpointMode | undefined = first;
    try {
      for (let passes = 0; mode; passes++) {
        const event: CheckpointerToMain =
          mode === 'restart'
            ? await this.options.alone(() => this.checkpoint('restart'))
            : await this.checkpoint('passive');
        if (event.type === 'failed') return;
        this.failedAtFrames = undefined;
        if (event.busy || mode === 'restart') return;
        mode = nextCheckpoint(event.wal, passes + 1, this.limits);
      }
    } catch (error) {
      // `alone` refused because the driver closed meanwhile: nothing to copy any more. Else the
      // thread could not start (its script missing): said, and tried again at a later commit.
      if (!this.closed && mode) {
        this.options.onCheckpoint?.({ type: 'failed', mode, error: String(error) });
      }
    } finally {
      this.running = false;
    }
  }

  private checkpoint(mode: CheckpointMode): Promise<CheckpointerToMain> {
    if (this.closed) return Promise.resolve({ type: 'failed', mode, error: 'driver closed' });
    return new Promise<CheckpointerToMain>((resolve) => {
      this.waiting = { mode, resolve };
      const worker = this.start();
      worker.ref(); // a checkpoint under way keeps the process alive until it answers
      worker.postMessage({ type: 'checkpoint', mode } satisfies CheckpointerToWorker);
    });
  }

  private answer(event: CheckpointerToMain): void {
    const waiting = this.waiting;
    if (!waiting) return;
    this.waiting = undefined;
    // Idle, the thread does not keep the process alive; closing, it must (close() waits for its
    // exit): a program whose last work is `await driver.close()` would otherwise end right
    // here, silently, when the close came during a checkpoint.
    if (!this.closed) this.worker?.unref();
    this.options.onCheckpoint?.(event);
    waiting.resolve(event);
  }

  private start(): Worker {
    if (this.worker) return this.worker;
    const workerData: CheckpointWorkerData = {
      path: this.options.path,
      busyTimeoutMs: this.options.busyTimeoutMs,
    };
    const worker = new Worker(workerScript('storage/sqlite/wal-checkpoint-worker.js'), {
      workerData,
    });
    worker.on('message', (event: CheckpointerToMain) => this.answer(event));
    // A thread that died answers its request as failed; the next round starts a new one.
    const lost = (reason: string): void => {
      if (this.worker !== worker) return;
      this.worker = undefined;
      const mode = this.waiting?.mode ?? 'passive';
      this.answer({ type: 'failed', mode, error: `checkpoint thread: ${reason}` });
    };
    worker.on('error', (error) => lost(error.message));
    worker.on('exit', (code) => lost(`exited with code ${code}`));
    this.worker = worker;
    return worker;
  }
}
