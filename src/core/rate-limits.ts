/**
 * The account limits answered with 429 (API.md "Limits"), as pure functions: the per-second
 * request window of `max_requests_per_second`, the UTC day of the daily quotas, and the headers
 * and messages of their answers. The API (`api/limits.ts`) feeds them counts; no I/O here.
 */
import type { PlanLimits } from './plans.js';

export const SECOND_MS = 1_000;
export const DAY_MS = 86_400_000;

/** Requests counted in one fixed window. */
export interface WindowCount {
  /** Start of the window, ms. */
  windowStart: number;
  count: number;
}

/**
 * Adds `by` requests of the window starting at `windowStart` to a stored count: the same window
 * adds up, a later window starts over, and an earlier one (a node whose clock is behind, or a
 * request that waited) counts in the stored window, so a window never restarts backwards. The
 * PostgreSQL driver does the same in one UPSERT.
 */
export function addToWindow(
  stored: WindowCount | undefined,
  windowStart: number,
  by: number,
): WindowCount {
  if (!stored || windowStart > stored.windowStart) return { windowStart, count: by };
  return { windowStart: stored.windowStart, count: stored.count + by };
}

/** The one-second window of `now`, ms. */
export const secondOf = (now: number): number => Math.floor(now / SECOND_MS) * SECOND_MS;

/** The UTC day of `now`: `[from, to)` in ms. */
export function utcDayOf(now: number): { from: number; to: number } {
  const from = Math.floor(now / DAY_MS) * DAY_MS;
  return { from, to: from + DAY_MS };
}

/** Response headers of a rate or quota answer; all values are decimal integers. */
export type LimitHeaders = Record<string, string>;

/** `Burst-RateLimit-*` for `max_requests_per_second`; the reset is the next window, Unix s. */
export function burstHeaders(limit: number, window: WindowCount): LimitHeaders {
  return {
    'Burst-RateLimit-Limit': String(limit),
    'Burst-RateLimit-Remaining': String(Math.max(0, limit - window.count)),
    'Burst-RateLimit-Reset': String(Math.ceil((window.windowStart + SECOND_MS) / SECOND_MS)),
  };
}

/** `RateLimit-*` for a daily quota; the reset is the next UTC midnight, Unix s. */
export function dailyHeaders(limit: number, used: number, now: number): LimitHeaders {
  return {
    'RateLimit-Limit': String(limit),
    'RateLimit-Remaining': String(Math.max(0, limit - used)),
    'RateLimit-Reset': String(utcDayOf(now).to / SECOND_MS),
  };
}

/** What a daily quota says about creating `adding` more messages with `used` made today. */
export type QuotaVerdict =
  /** Accepted without headers: no soft quota on this plan (and the hard one, if any, holds). */
  | { kind: 'unlimited' }
  /** Accepted; the headers show the soft quota (Remaining 0 once it is exceeded). */
  | { kind: 'accepted'; headers: LimitHeaders; softExceeded: boolean }
  /** Refused with 429: the hard quota would be exceeded. */
  | { kind: 'refused'; headers: LimitHeaders; message: string };

/**
 * Decides a message-creating request against `max_requests_per_day` (soft: never refuses) and
 * `max_requests_per_day_hard` (refuses what would take the day's count past it). 0 = no limit.
 * The soft headers count the messages this request adds, so `Remaining` is what is left after it.
 */
export function checkDailyQuota(p: {
  limits: Pick<PlanLimits, 'max_requests_per_day' | 'max_requests_per_day_hard'>;
  /** Messages the account created today (UTC) before this request. */
  used: number;
  /** Messages this request would create. */
  adding: number;
  now: number;
}): QuotaVerdict {
  const soft = p.limits.max_requests_per_day;
  const hard = p.limits.max_requests_per_day_hard;
  if (hard > 0 && p.used + p.adding > hard) {
    return {
      kind: 'refused',
      headers: dailyHeaders(hard, p.used, p.now),
      message:
        `daily quota exceeded: max_requests_per_day_hard is ${hard} messages per UTC day, ` +
        `${p.used} created today, this request would create ${p.adding}`,
    };
  }
  if (soft > 0) {
    const after = p.used + p.adding;
    return {
      kind: 'accepted',
      headers: dailyHeaders(soft, after, p.now),
      softExceeded: after > soft,
    };
  }
  return { kind: 'unlimited' };
}

/** The 429 message of `max_requests_per_second`. */
export const burstMessage = (limit: number): string =>
  `rate limit exceeded: max_requests_per_second is ${limit} requests per second for this account`;
