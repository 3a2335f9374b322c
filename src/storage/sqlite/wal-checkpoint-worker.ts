/**
 * The SQLite checkpoint thread's entry point (see wal-checkpointer.ts): a second connection to
 * the database that runs the checkpoints the main thread asks for, one at a time, and answers
 * with SQLite's counts.
 */
import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';
import type {
  CheckpointerToMain,
  CheckpointerToWorker,
  CheckpointWorkerData,
} from './wal-checkpointer.js';

if (!parentPort) throw new Error('wal-checkpoint-worker.js runs as a worker thread only');
const port = parentPort;
const { path, busyTimeoutMs } = workerData as CheckpointWorkerData;

const db = new Database(path, { fileMustExist: true });
// A RESTART checkpoint waits (on this thread) for readers of the WAL to finish.
db.pragma(`busy_timeout = ${busyTimeoutMs}`);
// A checkpoint fsyncs the WAL before copying it and the database file before it records the
// frames as copied (after which a writer may overwrite them): any level but OFF does that. FULL
// says so plainly, and costs nothing more here, since this connection never commits.
db.pragma('synchronous = FULL');
const checkpoints = {
  passive: db.prepare('PRAGMA wal_checkpoint(PASSIVE)').raw(),
  restart: db.prepare('PRAGMA wal_checkpoint(RESTART)').raw(),
};
/** The WAL's frame counts now, copying nothing. */
const frames = db.prepare('PRAGMA wal_checkpoint(NOOP)').raw();

const answer = (message: CheckpointerToMain): void => port.postMessage(message);

port.on('message', (message: CheckpointerToWorker) => {
  if (message.type === 'close') {
    db.close();
    port.close(); // nothing else keeps the thread alive: it exits
    return;
  }
  const started = performance.now();
  try {
    const [busy] = checkpoints[message.mode].get() as number[];
    const ms = performance.now() - started;
    // Read after the checkpoint, not its own counts: the main thread decides on the next one
    // from what commits added meanwhile.
    const [, logFrames = 0, checkpointedFrames = 0] = frames.get() as number[];
    answer({
      type: 'done',
      mode: message.mode,
      busy: busy !== 0,
      ms,
      wal: { logFrames, checkpointedFrames },
    });
  } catch (error) {
    answer({ type: 'failed', mode: message.mode, error: String(error) });
  }
});
