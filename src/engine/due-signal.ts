/**
 * Passes the due times that committed writes report (see due-watch.ts) to the engines that must
 * claim then: this node's at once, the other nodes' through the driver's wake-up (PostgreSQL
 * NOTIFY with the due time; SQLite has one process and sends nothing).
 *
 * Notifications are coalesced: the reports of one turn of the event loop share one NOTIFY
 * with their earliest time, and a time is not sent again while an earlier one already sent is
 * still ahead. A node woken at that earlier time claims and then reads the next due time from
 * storage, which by then holds every write reported before it.
 */
import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/logger.js';

export interface DueSignalOptions {
  clock: Clock;
  logger: Logger;
  /** This node's engine (`Engine.wakeAt`). */
  local: (dueAt: number) => void;
  /** The other nodes (`Driver.notifyWake`; undefined: now). */
  notify: (dueAt: number | undefined) => Promise<void>;
  /**
   * True while this node's engine claims what is due now by itself, without help (it runs and
   * has free delivery slots, `Engine.hasRoom`): then a write due now wakes no other node.
   */
  localHasRoom?: () => boolean;
}

export class DueSignal {
  /** The earliest time reported this turn, not yet notified. */
  private pending: number | undefined;
  /** The last time notified that was still in the future when it was sent. */
  private sentAhead = -Infinity;

  constructor(private readonly options: DueSignalOptions) {}

  /** Something is due at `dueAt` (ms; 0 or a past time means now). */
  report = (dueAt: number): void => {
    this.options.local(dueAt);
    const now = this.options.clock.now();
    // This node's engine claims it within milliseconds; waking the others would only have them
    // race it for the same rows (and cost a statement and a commit on the server per write).
    if (dueAt <= now && this.options.localHasRoom?.()) return;
    // An earlier wake-up is on its way: the woken nodes will read this write's due time.
    if (this.sentAhead > now && this.sentAhead <= dueAt) return;
    if (this.pending !== undefined) {
      this.pending = Math.min(this.pending, dueAt);
      return;
    }
    this.pending = dueAt;
    setImmediate(() => this.flush());
  };

  private flush(): void {
    const dueAt = this.pending;
    this.pending = undefined;
    if (dueAt === undefined) return;
    const now = this.options.clock.now();
    if (dueAt > now) this.sentAhead = dueAt;
    this.options
      .notify(dueAt > now ? dueAt : undefined)
      .catch((error: unknown) => this.options.logger.warn({ err: error }, 'NOTIFY failed'));
  }
}
