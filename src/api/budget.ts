/**
 * The monthly budget: with `budget` > 0, a publish that would take the month's billing (metered
 * messages × the plan's price) past it is refused with 429. Cross-node precision: see
 * `UsageMeter.monthCount` (other nodes' counts arrive with their next flush).
 */
import { FerryError } from '../core/errors.js';
import type { PlanLimits } from '../core/plans.js';
import type { Account } from '../core/types.js';
import { exceedsBudget } from '../core/usage-stats.js';
import type { ApiContext } from './context.js';

export async function checkBudget(p: {
  ctx: ApiContext;
  account: Account;
  limits: PlanLimits;
  /** Messages the publish would create. */
  adding: number;
  now: number;
}): Promise<void> {
  const budget = p.account.budget ?? 0;
  const pricePer100k = p.limits.price_per_100k_messages;
  if (budget <= 0 || pricePer100k <= 0) return;
  const monthMessages = await p.ctx.monthCount(p.account.id, 'messages', p.now);
  if (exceedsBudget({ budget, monthMessages, adding: p.adding, pricePer100k })) {
    throw new FerryError(
      429,
      `publishing would take this month's billing past the account's budget of $${budget} ` +
        `(${monthMessages} messages so far at $${pricePer100k} per 100,000)`,
    );
  }
}
