/**
 * Fairness between destinations: at most `cap` attempts in flight per origin (scheme, host and
 * port) on one engine, so a destination that accepts connections and never answers cannot hold
 * every `--concurrency` slot until its timeout (up to 2 hours on the paid plan) while other
 * destinations' messages wait.
 *
 * An attempt beyond the cap waits here for one of its origin's attempts to end, which for a
 * healthy, busy destination is a matter of milliseconds. When the origin is *stalled* instead
 * (at its cap, and its oldest attempt has run `stallMs` or longer), waiting would only hold
 * engine slots: its waiting messages, and the ones claimed while it stays stalled, are handed
 * back to storage to be due again after a hold (`holdMs`: the oldest attempt's age, at least
 * `stallMs`, at most `maxHoldMs`), in the origin's schedule (below): a destination that hangs
 * for hours costs about `ratePerSecond` re-claims a second, whatever its backlog, not a spin.
 * (With pacing off, `ratePerSecond` 0, they come back together at the end of the hold.)
 *
 * Between the two, an origin at its cap whose oldest attempt has run `congestedMs` or longer
 * is *congested*: its attempts are slow, so a message waiting here for one of its slots would
 * hold an engine slot for a long while. Its waiters go back to storage, due again at once
 * (`'returned'`), and the engine's claims take at most its free slots' worth of its messages
 * (`rooms`), passing over the rest, so the other destinations' messages behind its backlog are
 * claimed. A fast destination at its cap is not congested: its waiting messages start within
 * milliseconds and keep its slots full without a claim per attempt. The origin stops being
 * congested once its oldest attempt is younger than `congestedMs`; `onChange` reports when a
 * congested origin has a batch of free slots again or stalls, so the engine claims for it.
 *
 * An origin whose last `failureStreak` attempts all failed (refused connections, resets, error
 * statuses, timeouts) is *paced*: its attempts start at most `ratePerSecond` per second (a
 * token bucket, GCRA, with a burst of `burst`), however many of its messages are due. Without
 * this a refusing destination's backlog, each attempt failing in a millisecond, is claimed,
 * attempted and rescheduled as fast as the engine can go, and every other destination's
 * messages that became due after it wait behind the whole backlog. A paced origin's message
 * claimed over the pace goes back to storage with a due time in the origin's *schedule* (one
 * step of 1/ratePerSecond apart, after the slots already handed out), and the engine spreads the
 * origin's other due messages the same way in one statement (`messageSpreadDue`): the claim
 * then finds other destinations' messages at the head of the due order. The messages of a
 * stalled origin that are due are spread from the end of its hold the same way. No attempt is
 * counted for a message moved so; each still gets every attempt its retries allow, later. One
 * attempt that does not fail ends the pacing (messages already moved keep their due times:
 * bringing them forward could also bring a retry before its delay).
 */
import type { DeliveryAbort } from './delivery-abort.js';
import type { Clock } from '../core/clock.js';
import { originOf } from '../core/origin.js';

export { originOf };

export interface OriginLimitOptions {
  /** Attempts in flight per origin (0: no limit). */
  cap: number;
  /** Age of the oldest attempt after which a saturated origin counts as congested, ms. */
  congestedMs: number;
  /** Age of the oldest attempt after which a saturated origin counts as stalled, ms. */
  stallMs: number;
  /** Longest hold of a stalled origin's messages, ms. */
  maxHoldMs: number;
  /** Attempts per second to a paced origin (0: no pacing). */
  ratePerSecond: number;
  /** Consecutive failed attempts after which an origin is paced. */
  failureStreak: number;
  /** Attempts a paced origin may start at once. */
  burst: number;
  clock: Clock;
  /** A congested origin has free slots again, or stalled: claim for it (see `rooms`). */
  onChange?: (origin: string) => void;
}

/** An origin's failures, and its pace and schedule once it is paced or stalled. */
interface Pace {
  /** Consecutive failed attempts. */
  failures: number;
  /** GCRA's theoretical arrival time: the pace allows an attempt while it is near enough. */
  tat: number;
  /** The end of the origin's schedule: the next message moved gets a due time from here. */
  scheduleEnd: number;
}

/** The grain of a paced or stalled origin's schedule, ms (see takeSlot). */
export const TICK_MS = 100;

/**
 * A slot of an origin (pass it to `release`), or why none was taken: `'aborted'`, `'deferred'`
 * (the origin stalled: hold the message back), `'returned'` (the origin is congested: put the
 * message back, due again at once).
 */
export type OriginSlot = number | 'aborted' | 'deferred' | 'returned';

interface Origin {
  /** Slot id → the time its attempt started. */
  running: Map<number, number>;
  waiters: ((slot: OriginSlot) => void)[];
  timer?: NodeJS.Timeout;
  /** When `timer` fires. */
  timerAt?: number;
  /** The last hold handed out (see heldUntil). */
  held?: { at: number; until: number };
  /** See the header: claims take at most its free slots' worth of its messages. */
  congested: boolean;
  /** The start of the oldest attempt when its stall was reported (reported once per attempt). */
  stallReported?: number;
}

export class OriginLimit {
  private readonly origins = new Map<string, Origin>();
  private readonly paces = new Map<string, Pace>();
  /** Origins in `paces` that are paced: `publishSchedule` asks on every publish commit. */
  private pacedCount = 0;
  private nextSlot = 1;

  constructor(private readonly options: OriginLimitOptions) {}

  /** Between two attempts (and two scheduled due times) of a paced origin, ms. */
  get stepMs(): number {
    return 1000 / this.options.ratePerSecond;
  }

  private pacing(): boolean {
    return this.options.ratePerSecond > 0;
  }

  private paceOf(key: string, now: number): Pace {
    let pace = this.paces.get(key);
    if (!pace) {
      if (this.paces.size >= 10_000) this.prune(now);
      pace = { failures: 0, tat: now, scheduleEnd: now };
      this.paces.set(key, pace);
    }
    return pace;
  }

  /** Forgets origins that are neither paced nor have a schedule ahead. */
  private prune(now: number): void {
    for (const [key, pace] of this.paces) {
      if (pace.failures < this.options.failureStreak && pace.scheduleEnd <= now) {
        this.paces.delete(key);
      }
    }
  }

  /**
   * Counts an attempt's result. Returns true when this failure made the origin paced: its due
   * backlog should be spread now.
   */
  recordAttempt(url: string, failed: boolean, now: number): boolean {
    if (!this.pacing()) return false;
    const key = originOf(url);
    if (!failed) {
      const pace = this.paces.get(key);
      if (pace && this.isPaced(pace)) this.pacedCount -= 1;
      if (pace && pace.scheduleEnd <= now) this.paces.delete(key);
      else if (pace) pace.failures = 0;
      return false;
    }
    const pace = this.paceOf(key, now);
    pace.failures += 1;
    if (pace.failures !== this.options.failureStreak) return false;
    this.pacedCount += 1;
    pace.tat = now;
    return true;
  }

  /**
   * True when a message for `url` may go to the engine now as a claim would take it (`rooms`):
   * its origin is neither paced nor stalled, and has a free slot if it is congested. For a
   * publish handed straight to the engine (Engine.reserve).
   */
  takesNew(url: string, now: number): boolean {
    if (this.pacing() && this.paced(url)) return false;
    const origin = this.origins.get(originOf(url));
    if (!origin) return true;
    if (this.isStalled(origin, now)) return false;
    const room = this.roomIfCongested(origin, now);
    return room === undefined || room > 0;
  }

  /** True when the origin is paced (its last attempts all failed). */
  paced(url: string): boolean {
    const pace = this.paces.get(originOf(url));
    return pace !== undefined && this.isPaced(pace);
  }

  /** True when an attempt to the origin may start now (always, unless it is paced). */
  admit(url: string, now: number): boolean {
    if (!this.pacing() || !this.paced(url)) return true;
    const pace = this.paceOf(originOf(url), now);
    const tat = Math.max(pace.tat, now);
    if (tat - now > (this.options.burst - 1) * this.stepMs) return false;
    pace.tat = tat + this.stepMs;
    return true;
  }

  /**
   * The next due time in the origin's schedule, not before `notBefore`; takes it. Due times are
   * whole `TICK_MS`: the messages of one tick share a claim (and a release statement).
   */
  takeSlot(url: string, now: number, notBefore = now + this.stepMs): number {
    if (!this.pacing()) return notBefore;
    const pace = this.paceOf(originOf(url), now);
    const at = Math.max(pace.scheduleEnd, notBefore);
    pace.scheduleEnd = at + this.stepMs;
    return Math.ceil(at / TICK_MS) * TICK_MS;
  }

  /**
   * For messages published now (see Publisher): undefined while no origin is stalled or paced,
   * else a function giving a message to such an origin its due time in the origin's schedule,
   * as a spread would (undefined for the other origins). Such a message is then never claimed
   * only to be handed back, nor read past by every claim until a spread moves it.
   */
  publishSchedule(now: number): ((url: string) => number | undefined) | undefined {
    if (!this.holdsAny(now)) return undefined;
    return (url) => {
      const key = originOf(url);
      if (this.isStalled(this.origins.get(key), now)) {
        return this.takeSlot(url, now, this.heldUntil(url, now));
      }
      const pace = this.paces.get(key);
      return this.pacing() && pace && this.isPaced(pace) ? this.takeSlot(url, now) : undefined;
    };
  }

  /**
   * True when some origin is paced or stalled. A count for the paced (up to 10,000 origins with
   * failures are remembered); the stalled are among the origins with attempts running.
   */
  private holdsAny(now: number): boolean {
    if (this.pacing() && this.pacedCount > 0) return true;
    for (const origin of this.origins.values()) if (this.isStalled(origin, now)) return true;
    return false;
  }

  private isPaced(pace: Pace): boolean {
    return pace.failures >= this.options.failureStreak;
  }

  /** A spread of the origin's due messages ended at `last` (see takeSlot). */
  scheduledUntil(url: string, last: number, now: number): void {
    const pace = this.paceOf(originOf(url), now);
    pace.scheduleEnd = Math.max(pace.scheduleEnd, last + this.stepMs);
  }

  /** When the origin's oldest attempt started, if it is at its cap. */
  private saturatedSince(origin: Origin | undefined): number | undefined {
    if (!origin || this.options.cap <= 0 || origin.running.size < this.options.cap) return;
    let oldest = Infinity;
    for (const startedAt of origin.running.values()) oldest = Math.min(oldest, startedAt);
    return oldest;
  }

  /** True when a message for `origin` should not be started or wait now, but be held. */
  stalled(url: string, now: number): boolean {
    return this.isStalled(this.origins.get(originOf(url)), now);
  }

  private isStalled(origin: Origin | undefined, now: number): boolean {
    const since = this.saturatedSince(origin);
    return since !== undefined && now - since >= this.options.stallMs;
  }

  /** Free slots of an origin, or undefined when it is not congested (no limit for a claim). */
  private roomIfCongested(origin: Origin, now: number): number | undefined {
    if (!origin.congested) return undefined;
    let oldest = Infinity;
    for (const startedAt of origin.running.values()) oldest = Math.min(oldest, startedAt);
    if (now - oldest < this.options.congestedMs) {
      origin.congested = false; // its attempts are fast again (or it has none)
      return undefined;
    }
    return Math.max(0, this.options.cap - origin.running.size - origin.waiters.length);
  }

  /**
   * The origins a claim may take only some of the due messages of, and how many: a congested
   * origin its free slots' worth; a stalled or paced one `backlogRoom` (its messages are claimed
   * only to be handed back into its schedule, and a few are enough for the engine to see its
   * backlog and spread it, while the claim reaches other destinations' messages behind it).
   */
  rooms(now: number, backlogRoom: number): { origin: string; room: number }[] {
    const rooms = new Map<string, number>();
    for (const [key, origin] of this.origins) {
      if (this.isStalled(origin, now)) {
        rooms.set(key, backlogRoom);
        continue;
      }
      const room = this.roomIfCongested(origin, now);
      if (room === undefined) continue;
      rooms.set(key, room);
      this.watch(key, origin); // to report its stall, should it come
    }
    if (this.pacing()) {
      for (const [key, pace] of this.paces) {
        if (!this.isPaced(pace)) continue;
        rooms.set(key, Math.min(rooms.get(key) ?? backlogRoom, backlogRoom));
      }
    }
    return [...rooms].map(([origin, room]) => ({ origin, room }));
  }

  /**
   * Until when a stalled origin's message is held: the hold plus up to half of it at random, so
   * a large backlog comes back spread out. Messages held within 50 ms share one time (and so one
   * release statement).
   */
  heldUntil(url: string, now: number): number {
    const origin = this.origins.get(originOf(url));
    if (origin?.held && now - origin.held.at < 50) return origin.held.until;
    const since = this.saturatedSince(origin) ?? now;
    const { stallMs, maxHoldMs } = this.options;
    const hold = Math.min(maxHoldMs, Math.max(stallMs, now - since));
    const until = now + Math.round(hold * (1 + Math.random() / 2));
    if (origin) origin.held = { at: now, until };
    return until;
  }

  /**
   * Takes a slot of the origin, waiting while it is at its cap. Resolves `'deferred'` when the
   * origin stalls meanwhile, `'aborted'` when `abort` fires first (no slot taken either way).
   */
  acquire(url: string, abort?: DeliveryAbort): Promise<OriginSlot> {
    const key = originOf(url);
    let origin = this.origins.get(key);
    if (!origin) {
      origin = { running: new Map(), waiters: [], congested: false };
      this.origins.set(key, origin);
    }
    if (this.options.cap <= 0 || origin.running.size < this.options.cap) {
      return Promise.resolve(this.start(origin));
    }
    if (abort?.aborted) return Promise.resolve('aborted');
    const waiting = origin;
    return new Promise<OriginSlot>((resolve) => {
      const grant = (slot: OriginSlot): void => {
        abort?.off(onAbort);
        resolve(slot);
      };
      const onAbort = (): void => {
        const i = waiting.waiters.indexOf(grant);
        if (i !== -1) waiting.waiters.splice(i, 1);
        resolve('aborted');
      };
      abort?.on(onAbort);
      waiting.waiters.push(grant);
      this.watch(key, waiting);
    });
  }

  /** Ends an attempt: its slot passes to the origin's next waiter, or is freed. */
  release(url: string, slot: number): void {
    const key = originOf(url);
    const origin = this.origins.get(key);
    if (!origin) return;
    origin.running.delete(slot);
    const next = origin.waiters.shift();
    if (next) next(this.start(origin));
    else if (origin.running.size === 0) {
      clearTimeout(origin.timer);
      this.origins.delete(key);
      if (origin.congested) this.options.onChange?.(key);
    } else if (origin.congested && origin.running.size === this.options.cap - this.refill) {
      this.options.onChange?.(key);
    }
  }

  /** Free slots of a congested origin that make a claim for it worth its cost. */
  private get refill(): number {
    return Math.max(1, Math.floor(this.options.cap / 8));
  }

  private start(origin: Origin): number {
    const slot = this.nextSlot++;
    origin.running.set(slot, this.options.clock.now());
    return slot;
  }

  /**
   * Watches a saturated origin with waiters: once it is congested its waiters go back to
   * storage (`'returned'`); once it stalls, waiters are held back (`'deferred'`) and the stall
   * is reported (the engine then claims its messages and holds them back, see the engine's
   * holdStalled). Re-checks until then.
   */
  private watch(key: string, origin: Origin): void {
    const since = this.saturatedSince(origin);
    if (since === undefined) return;
    const reportStall = origin.congested && origin.stallReported !== since;
    if (origin.waiters.length === 0 && !reportStall) return;
    const { congestedMs, stallMs } = this.options;
    const at = origin.congested || congestedMs >= stallMs ? since + stallMs : since + congestedMs;
    // A timer set for the stall of a congested origin comes too late for waiters that arrive
    // once it stopped counting as congested: they must go back after `congestedMs`.
    if (origin.timer !== undefined && (origin.timerAt ?? Infinity) <= at) return;
    clearTimeout(origin.timer);
    origin.timerAt = at;
    origin.timer = setTimeout(
      () => {
        origin.timer = undefined;
        const now = this.options.clock.now();
        const oldest = this.saturatedSince(origin);
        if (oldest !== undefined && now - oldest >= stallMs) {
          for (const waiter of origin.waiters.splice(0)) waiter('deferred');
          if (origin.congested && origin.stallReported !== oldest) {
            origin.stallReported = oldest;
            this.options.onChange?.(key);
          }
        } else if (oldest !== undefined && now - oldest >= congestedMs) {
          origin.congested = true;
          for (const waiter of origin.waiters.splice(0)) waiter('returned');
        }
        this.watch(key, origin);
      },
      Math.max(1, at - this.options.clock.now()),
    );
    origin.timer.unref();
  }
}
