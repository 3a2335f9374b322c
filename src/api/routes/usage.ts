/**
 * The account's own metering, read with its messaging token (Ferry extensions, made for the web
 * console, which signs in with a token and has no management credentials):
 * `GET /v2/usage?period=…` answers the stats object of the management API's
 * `GET /v2/queue/stats/{id}` for the token's account, and `GET /v2/usage/now` its messages that
 * are not final yet, by state, its DLQ size and the runs in its workflow DLQ. Both read only the
 * token's account.
 */
import type { FastifyInstance } from 'fastify';
import type { PlanTable } from '../../core/plans.js';
import { parsePeriod } from '../../core/usage-stats.js';
import { accountStats } from '../mgmt/stats.js';
import type { ApiContext } from '../context.js';
import { queryOf } from './flow-control.js';

/** What these routes need besides the messaging context. */
export interface UsageReadOptions {
  plans: PlanTable;
  /** Writes this node's metered counts so far, so the answer includes them. */
  flush(): Promise<void>;
}

/** Each count of `/v2/usage/now` stops here (a count equal to it means "at least"). */
export const NOW_COUNT_LIMIT = 100_000;

export function usageRoutes(
  app: FastifyInstance,
  ctx: ApiContext,
  options: UsageReadOptions,
): void {
  app.get('/v2/usage', async (request) => {
    const period = parsePeriod(queryOf(request.url, ['period']).get('period') ?? undefined);
    const account = request.account;
    await options.flush();
    return accountStats(ctx.executor, {
      accountId: account.id,
      period,
      now: ctx.clock.now(),
      pricePer100k: options.plans[account.plan].price_per_100k_messages,
    });
  });

  app.get('/v2/usage/now', async (request) => {
    queryOf(request.url, []);
    const accountId = request.account.id;
    const [counts, dlq, workflowDlq] = await Promise.all([
      ctx.executor.messageCountByState({
        now: ctx.clock.now(),
        limit: NOW_COUNT_LIMIT,
        accountId,
      }),
      ctx.executor.dlqCount({ accountId }),
      ctx.executor.workflowDlqCount({ accountId, limit: NOW_COUNT_LIMIT }),
    ]);
    return { ...counts, dlq, workflowDlq, limit: NOW_COUNT_LIMIT };
  });
}
