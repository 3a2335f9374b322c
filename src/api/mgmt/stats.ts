/** `GET /v2/queue/stats/{id}?period=…`: the account's metered usage (see core/usage-stats.ts). */
import type { FastifyInstance } from 'fastify';
import {
  buildStats,
  monthWindow,
  parsePeriod,
  periodWindow,
  type StatsPeriod,
  type UsageStats,
} from '../../core/usage-stats.js';
import type { Executor } from '../../storage/driver.js';
import { badRequest } from '../../core/errors.js';
import { ownedAccount } from './accounts.js';
import type { MgmtContext } from './context.js';

export function statsRoutes(app: FastifyInstance, ctx: MgmtContext): void {
  app.get<{ Params: { id: string } }>('/v2/queue/stats/:id', async (request) => {
    const query = new URLSearchParams(request.url.split('?')[1] ?? '');
    for (const name of query.keys()) {
      if (name !== 'period')
        throw badRequest(`unknown query parameter "${name}" (allowed: period)`);
    }
    const period = parsePeriod(query.get('period') ?? undefined);
    const account = await ownedAccount(ctx, request);
    // This node's counts so far go in first; other nodes' arrive with their next flush.
    await ctx.meter.runOnce();
    return accountStats(ctx.executor, {
      accountId: account.id,
      period,
      now: ctx.clock.now(),
      pricePer100k: ctx.plans[account.plan].price_per_100k_messages,
    });
  });
}

/**
 * An account's stats object for `period` up to `now`, from its metered buckets and DLQ size
 * (also the console's `GET /v2/usage`, read with the account's own token).
 */
export async function accountStats(
  executor: Executor,
  p: { accountId: string; period: StatsPeriod; now: number; pricePer100k: number },
): Promise<UsageStats> {
  const window = periodWindow(p.period, p.now);
  const month = monthWindow(p.now);
  const [periodBuckets, monthBuckets, dlqCount] = await Promise.all([
    executor.usageSumByStep({ subjectId: p.accountId, ...window }),
    executor.usageSumByStep({ subjectId: p.accountId, ...month }),
    executor.dlqCount({ accountId: p.accountId }),
  ]);
  return buildStats({
    period: window,
    periodBuckets,
    month,
    monthBuckets,
    dlqCount,
    pricePer100k: p.pricePer100k,
  });
}
