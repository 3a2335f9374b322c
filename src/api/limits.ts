/**
 * The account limits answered with 429 (API.md "Limits"; docs/limits.md):
 *
 * - `max_requests_per_second`: every authenticated messaging request counts, publishes
 *   included (a hook after authentication). The count is `rateCounterIncrement`: shared by all
 *   nodes on PostgreSQL (one UPSERT per request), in memory on SQLite.
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
import type { PlanLimits } from '../core/plans.js';
import {
  burstHeaders,
  burstMessage,
  checkDailyQuota,
  secondOf,
  type LimitHeaders,
} from '../core/rate-limits.js';
import type { Account } from '../core/types.js';
import { checkBudget } from './budget.js';
import type { ApiContext } from './context.js';

/** An `onRequest` hook after authentication: counts the request, 429 beyond the limit. */
export function requestRateHook(ctx: ApiContext) {
  return async (request: FastifyRequest): Promise<void> => {
    const account = request.account;
    const limit = ctx.accounts.limits(account).max_requests_per_second;
    if (limit <= 0) return;
    const window = await ctx.executor.rateCounterIncrement({
      subjectId: account.id,
      windowStart: secondOf(ctx.clock.now()),
      by: 1,
    });
    if (window.count > limit) {
      throw new FerryError(429, burstMessage(limit), { headers: burstHeaders(limit, window) });
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
