/**
 * The account limits answered with 429 (API.md "Limits"; docs/limits.md):
 *
 * - `max_requests_per_second`: every authenticated messaging request counts, publishes
 *   included (a hook after authentication). The count is `rateCounterIncrement`: shared by all
 *   nodes on PostgreSQL (an UPSERT per share of the limit, see RequestRateLimiter), in memory
 *   on SQLite.
 * - `max_requests_per_day` (soft) and `max_requests_per_day_hard`: messages created per UTC day,
 *   read from metering (`UsageMeter.dayCount`), so callbacks, schedule ticks and DLQ retries
 *   count as they are metered. Requests that create messages (publish, batch, DLQ retry) are
 *   checked before they store anything; the engine and scheduler are never refused.
 * - the monthly `budget` (budget.ts), checked after the quota.
 *
 * 0 means "no limit" for each of these.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { FerryError } from '../core/errors.js';
import { StorageNoAnswerError } from '../storage/storage-deadline.js';
import type { PlanLimits } from '../core/plans.js';
import {
  burstHeaders,
  burstMessage,
  checkDailyQuota,
  secondOf,
  type LimitHeaders,
  type WindowCount,
} from '../core/rate-limits.js';
import type { Account } from '../core/types.js';
import { checkBudget } from './budget.js';
import type { ApiContext } from './context.js';

/**
 * Counts requests against `max_requests_per_second` with few round trips: a node takes a share
 * of the second's limit from the shared counter at a time (10 %, at least 1) and admits
 * requests from it locally; a request that finds its share used up takes the next share. Every
 * admitted request was taken from the shared count, so all nodes together never admit more than
 * the limit; a node may refuse while another still holds part of its share (at most share - 1
 * requests per other node and second). With one node it is exact.
 */
export class RequestRateLimiter {
  /** The share of this node per account: the window, requests taken and requests admitted. */
  private readonly shares = new Map<string, { windowStart: number; taken: number; used: number }>();

  constructor(
    private readonly ctx: Pick<ApiContext, 'executor'>,
    /** Fraction of the limit taken per round trip (1 = the whole second's limit). */
    private readonly shareFraction = 0.1,
  ) {}

  /** Admits one request of `accountId` at `now`; resolves with the refusal's window when over. */
  async admit(accountId: string, limit: number, now: number): Promise<WindowCount | undefined> {
    const windowStart = secondOf(now);
    const local = this.shares.get(accountId);
    if (local && local.windowStart === windowStart && local.used < local.taken) {
      local.used++;
      return undefined;
    }
    const chunk = Math.max(1, Math.floor(limit * this.shareFraction));
    const window = await this.ctx.executor
      .rateCounterIncrement({ subjectId: accountId, windowStart, by: chunk })
      .catch((error: unknown) => {
        // Only the counter's write is in doubt: the request itself has not been acted on, so
        // its 503 may say that nothing was stored.
        if (error instanceof StorageNoAnswerError && error.applied === 'unknown') {
          throw new StorageNoAnswerError(
            'no',
            'did not confirm the request count in time (the request was not acted on)',
            { cause: error },
          );
        }
        throw error;
      });
    const granted = Math.max(0, Math.min(chunk, limit - (window.count - chunk)));
    let share = this.shares.get(accountId); // read again: other requests ran while we waited
    if (!share || share.windowStart !== window.windowStart) {
      if (this.shares.size > 10_000) this.shares.clear();
      share = { windowStart: window.windowStart, taken: 0, used: 0 };
      this.shares.set(accountId, share);
    }
    share.taken += granted;
    if (share.used < share.taken) {
      share.used++;
      return undefined;
    }
    return window;
  }
}

/** An `onRequest` hook after authentication: counts the request, 429 beyond the limit. */
export function requestRateHook(ctx: ApiContext, limiter = new RequestRateLimiter(ctx)) {
  return async (request: FastifyRequest): Promise<void> => {
    const account = request.account;
    const limit = ctx.accounts.limits(account).max_requests_per_second;
    if (limit <= 0) return;
    const refused = await limiter.admit(account.id, limit, ctx.clock.now());
    if (refused) {
      throw new FerryError(429, burstMessage(limit), { headers: burstHeaders(limit, refused) });
    }
  };
}

/**
 * Admits a request that creates `adding` messages: 429 with `RateLimit-*` beyond the hard daily
 * quota, 429 beyond the budget. Returns the soft quota's headers for the answer (none when the
 * plan has no soft quota).
 *
 * Precision: exact on one node; with several nodes, the others' counts of their last flush
 * interval (`--metering-flush`, 5 s by default) are not seen yet (see docs/limits.md).
 */
export async function admitMessages(p: {
  ctx: ApiContext;
  account: Account;
  limits: PlanLimits;
  adding: number;
  now: number;
}): Promise<LimitHeaders | undefined> {
  const { ctx, account, limits, adding, now } = p;
  let headers: LimitHeaders | undefined;
  if (limits.max_requests_per_day > 0 || limits.max_requests_per_day_hard > 0) {
    const used = await ctx.dayCount(account.id, 'messages', now);
    const verdict = checkDailyQuota({ limits, used, adding, now });
    if (verdict.kind === 'refused') {
      throw new FerryError(429, verdict.message, { headers: verdict.headers });
    }
    if (verdict.kind === 'accepted') headers = verdict.headers;
  }
  await checkBudget(p);
  return headers;
}

/** `admitMessages` for a route: the soft quota's headers go on `reply`. */
export async function admitRequest(
  ctx: ApiContext,
  request: FastifyRequest,
  reply: FastifyReply,
  adding: number,
): Promise<void> {
  const account = request.account;
  const headers = await admitMessages({
    ctx,
    account,
    limits: ctx.accounts.limits(account),
    adding,
    now: ctx.clock.now(),
  });
  if (headers) void reply.headers(headers);
}
