/** `GET /v2/queue/stats/{id}?period=…`: the account's metered usage (see core/usage-stats.ts). */
import type { FastifyInstance } from 'fastify';
import { buildStats, monthWindow, parsePeriod, periodWindow } from '../../core/usage-stats.js';
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
    const now = ctx.clock.now();
    const window = periodWindow(period, now);
    const month = monthWindow(now);
    const [periodBuckets, monthBuckets, dlqCount] = await Promise.all([
      ctx.executor.usageSumByStep({ subjectId: account.id, ...window }),
      ctx.executor.usageSumByStep({ subjectId: account.id, ...month }),
      ctx.executor.dlqCount({ accountId: account.id }),
    ]);
    return buildStats({
      period: window,
      periodBuckets,
      month,
      monthBuckets,
      dlqCount,
      pricePer100k: ctx.plans[account.plan].price_per_100k_messages,
    });
  });
}
