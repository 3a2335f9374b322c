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
 * `stallMs`, at most `maxHoldMs`). The hold grows with the stall, so a destination that hangs
 * for hours costs a re-claim of its backlog about once a minute, not a spin.
 */
import type { Clock } from '../core/clock.js';

export interface OriginLimitOptions {
  /** Attempts in flight per origin (0: no limit). */
  cap: number;
  /** Age of the oldest attempt after which a saturated origin counts as stalled, ms. */
  stallMs: number;
  /** Longest hold of a stalled origin's messages, ms. */
  maxHoldMs: number;
  clock: Clock;
}

/** A slot of an origin (pass it to `release`), or why none was taken. */
export type OriginSlot = number | 'aborted' | 'deferred';

interface Origin {
  /** Slot id → the time its attempt started. */
  running: Map<number, number>;
  waiters: ((slot: OriginSlot) => void)[];
  timer?: NodeJS.Timeout;
  /** The last hold handed out (see heldUntil). */
  held?: { at: number; until: number };
}

/** Origins of recent URLs: each message is looked up a few times, and URLs repeat. */
const origins = new Map<string, string>();

/** `https://Example.com:443/x` → `https://example.com`; an unparsable URL is its own origin. */
export function originOf(url: string): string {
  let origin = origins.get(url);
  if (origin === undefined) {
    try {
      origin = new URL(url).origin;
    } catch {
      origin = url;
    }
    if (origins.size >= 10_000) origins.clear();
    origins.set(url, origin);
  }
  return origin;
}

export class OriginLimit {
  private readonly origins = new Map<string, Origin>();
  private nextSlot = 1;

  constructor(private readonly options: OriginLimitOptions) {}

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
  acquire(url: string, abort?: AbortController): Promise<OriginSlot> {
    const key = originOf(url);
    let origin = this.origins.get(key);
    if (!origin) {
      origin = { running: new Map(), waiters: [] };
      this.origins.set(key, origin);
    }
    if (this.options.cap <= 0 || origin.running.size < this.options.cap) {
      return Promise.resolve(this.start(origin));
    }
    if (abort?.signal.aborted) return Promise.resolve('aborted');
    const waiting = origin;
    return new Promise<OriginSlot>((resolve) => {
      const grant = (slot: OriginSlot): void => {
        abort?.signal.removeEventListener('abort', onAbort);
        resolve(slot);
      };
      const onAbort = (): void => {
        const i = waiting.waiters.indexOf(grant);
        if (i !== -1) waiting.waiters.splice(i, 1);
        resolve('aborted');
      };
      abort?.signal.addEventListener('abort', onAbort, { once: true });
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
    }
  }

  private start(origin: Origin): number {
    const slot = this.nextSlot++;
    origin.running.set(slot, this.options.clock.now());
    return slot;
  }

  /** Hands the waiters back (`'deferred'`) once the origin stalls; re-checks until then. */
  private watch(key: string, origin: Origin): void {
    if (origin.timer !== undefined || origin.waiters.length === 0) return;
    const now = this.options.clock.now();
    const since = this.saturatedSince(origin) ?? now;
    origin.timer = setTimeout(
      () => {
        origin.timer = undefined;
        if (this.isStalled(origin, this.options.clock.now())) {
          for (const waiter of origin.waiters.splice(0)) waiter('deferred');
        }
        this.watch(key, origin);
      },
      Math.max(1, since + this.options.stallMs - now),
    );
    origin.timer.unref();
  }
}
