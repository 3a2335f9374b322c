/**
 * Messaging accounts of the calling management user: create, list, get, delete, set plan,
 * update budget, reset token. Another user's account is answered 404, like a missing one.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { badRequest, notFound } from '../../core/errors.js';
import { isPlanName, PLAN_NAMES } from '../../core/plans.js';
import { ACCOUNT_REGIONS, type Account } from '../../core/types.js';
import { createAccount, newAccountPassword } from '../../engine/account-factory.js';
import { jsonBody, oneOf } from './body.js';
import type { MgmtContext } from './context.js';
import { accountJson } from './presenters.js';
import { accountCredentials } from './secrets.js';

type IdRequest = FastifyRequest<{ Params: { id: string } }>;

/** The account `id` when the caller owns it, else 404. */
export async function ownedAccount(ctx: MgmtContext, request: IdRequest): Promise<Account> {
  const account = await ctx.executor.accountGet({ id: request.params.id });
  if (!account || account.ownerId !== request.mgmtUser.id) {
    throw notFound(`account "${request.params.id}" not found`);
  }
  return account;
}

/** The largest budget accepted, dollars: far above any real bill, far below float trouble. */
export const MAX_BUDGET = 1_000_000_000;

export function accountRoutes(app: FastifyInstance, ctx: MgmtContext): void {
  const json = (
    request: FastifyRequest,
    account: Account,
    credentials = accountCredentials(ctx.secrets, ctx.logger, account),
  ): Record<string, unknown> =>
    accountJson({
      account,
      owner: request.mgmtUser,
      limits: ctx.plans[account.plan],
      eventRetentionMs: ctx.eventRetentionMs,
      credentials,
    });
  /** Re-reads an account after a change, and drops this node's cached copy. */
  const reload = async (id: string): Promise<Account> => {
    ctx.accounts.forget(id);
    const account = await ctx.executor.accountGet({ id });
    if (!account) throw notFound(`account "${id}" not found`);
    return account;
  };

  app.post('/v2/queue', async (request) => {
    const body = jsonBody(request, ['region', 'type']);
    const region = oneOf('region', body.region, ACCOUNT_REGIONS, 'us-east-1');
    const plan = oneOf('type', body.type, PLAN_NAMES, 'free');
    const { account, password, token } = await createAccount({
      executor: ctx.executor,
      plan,
      now: ctx.clock.now(),
      ownerId: request.mgmtUser.id,
      region,
      secrets: ctx.secrets,
    });
    return json(request, account, { password, token });
  });

  app.get('/v2/queue', async (request) => {
    const accounts = await ctx.executor.accountList({ ownerId: request.mgmtUser.id });
    return accounts.map((account) => json(request, account));
  });

  app.get<{ Params: { id: string } }>('/v2/queue/:id', async (request) =>
    json(request, await ownedAccount(ctx, request)),
  );

  app.delete<{ Params: { id: string } }>('/v2/queue/:id', async (request) => {
    const account = await ownedAccount(ctx, request);
    await ctx.executor.accountDelete({ id: account.id });
    ctx.accounts.forget(account.id);
    return json(request, account);
  });

  app.post<{ Params: { id: string } }>('/v2/queue/set-plan/:id', async (request) => {
    const account = await ownedAccount(ctx, request);
    const body = jsonBody(request, ['plan_name']);
    const plan = body.plan_name;
    if (typeof plan !== 'string' || !isPlanName(plan)) {
      throw badRequest(
        `plan_name must be one of ${PLAN_NAMES.join(', ')}, got ${JSON.stringify(plan) ?? 'nothing'}`,
      );
    }
    if (plan !== account.plan) {
      await ctx.executor.accountUpdate({ id: account.id, plan, planChangedAt: ctx.clock.now() });
    }
    return json(request, await reload(account.id));
  });

  app.patch<{ Params: { id: string } }>('/v2/queue/update-budget/:id', async (request) => {
    const account = await ownedAccount(ctx, request);
    const { budget } = jsonBody(request, ['budget']);
    if (
      typeof budget !== 'number' ||
      !Number.isInteger(budget) ||
      budget < 0 ||
      budget > MAX_BUDGET
    ) {
      throw badRequest(
        `budget must be a whole number of dollars from 0 (no limit) to ${MAX_BUDGET}, got ${JSON.stringify(budget) ?? 'nothing'}`,
      );
    }
    await ctx.executor.accountUpdate({ id: account.id, budget });
    return json(request, await reload(account.id));
  });

  app.post<{ Params: { id: string } }>('/v2/queue/rotate-token/:id', async (request) => {
    const account = await ownedAccount(ctx, request);
    jsonBody(request, []);
    const { password, token, stored } = newAccountPassword(account.id, ctx.secrets);
    await ctx.executor.accountUpdate({ id: account.id, ...stored });
    // Dropped from this node's cache at once; other nodes re-read the row for every
    // authentication when they share a database (see AccountDirectory).
    const rotated = await reload(account.id);
    return json(request, rotated, { password, token });
  });
}
