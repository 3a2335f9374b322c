/**
 * Flow-control keys: `GET /v2/flowControl[?search]`, `GET /v2/flowControl/{key}`, and
 * `POST …/{key}/pause|resume|pin|unpin|resetRate`; `GET /v2/globalParallelism`.
 * A key exists once a message was published with it; an unknown key is 404.
 */
import type { FastifyInstance } from 'fastify';
import { parseDuration } from '../../core/duration.js';
import { badRequest, limitExceeded, notFound } from '../../core/errors.js';
import { flowControlKeyView, type FlowGate } from '../../core/flow-control.js';
import { quoteValue } from '../../core/headers.js';
import type { FlowGateUpdateParams } from '../../storage/driver.js';
import type { ApiContext } from '../context.js';
import { searchParams } from './messages.js';
import { TOKEN_PARAMS } from '../../core/destination.js';

type KeyRequest = { Params: { key: string } };

/** Reads the allowed query parameters; any other is a 400 (API.md "Conventions"). */
export function queryOf(url: string, allowed: readonly string[]): URLSearchParams {
  const query = searchParams(url);
  for (const name of query.keys()) {
    if (!allowed.includes(name) && !TOKEN_PARAMS.has(name)) {
      throw badRequest(
        `unknown query parameter ${quoteValue(name)} (allowed: ${allowed.join(', ') || 'none'})`,
      );
    }
  }
  return query;
}

function positiveInteger(query: URLSearchParams, name: string): number | undefined {
  const text = query.get(name);
  if (text === null) return undefined;
  if (!/^\d{1,9}$/.test(text) || Number(text) === 0) {
    throw badRequest(`invalid ${name} ${quoteValue(text)}: expected a positive integer`);
  }
  return Number(text);
}

function flag(query: URLSearchParams, name: string): boolean {
  const text = query.get(name);
  if (text === null || text === 'false') return false;
  if (text === 'true') return true;
  throw badRequest(`invalid ${name} ${quoteValue(text)}: expected true or false`);
}

export function flowControlRoutes(app: FastifyInstance, ctx: ApiContext): void {
  const update = async (
    accountId: string,
    key: string,
    changes: Omit<FlowGateUpdateParams, 'accountId' | 'kind' | 'name' | 'now'>,
  ): Promise<FlowGate> => {
    const gate = await ctx.executor.flowGateUpdate({
      accountId,
      kind: 'key',
      name: key,
      now: ctx.clock.now(),
      ...changes,
    });
    if (!gate) throw notFound(`flow-control key ${quoteValue(key)} not found`);
    ctx.onMessagesStored(); // the key may admit now: wake the engine
    return gate;
  };

  app.get('/v2/flowControl', async (request) => {
    const search = queryOf(request.url, ['search']).get('search') ?? undefined;
    const gates = await ctx.executor.flowGateList({
      accountId: request.account.id,
      kind: 'key',
      ...(search === undefined ? {} : { search }),
    });
    return gates.map(flowControlKeyView);
  });

  app.get<KeyRequest>('/v2/flowControl/:key', async (request) => {
    queryOf(request.url, []);
    const gate = await ctx.executor.flowGateGet({
      accountId: request.account.id,
      kind: 'key',
      name: request.params.key,
    });
    if (!gate) throw notFound(`flow-control key ${quoteValue(request.params.key)} not found`);
    return flowControlKeyView(gate);
  });

  app.post<KeyRequest>('/v2/flowControl/:key/pause', async (request) => {
    queryOf(request.url, []);
    return flowControlKeyView(
      await update(request.account.id, request.params.key, { paused: true }),
    );
  });

  app.post<KeyRequest>('/v2/flowControl/:key/resume', async (request) => {
    queryOf(request.url, []);
    return flowControlKeyView(
      await update(request.account.id, request.params.key, { paused: false }),
    );
  });

  /** Pins the given limits (later publishes no longer change them) and resets the rate state. */
  app.post<KeyRequest>('/v2/flowControl/:key/pin', async (request) => {
    const query = queryOf(request.url, ['parallelism', 'rate', 'period']);
    const parallelism = positiveInteger(query, 'parallelism');
    const rate = positiveInteger(query, 'rate');
    const periodText = query.get('period');
    if (parallelism === undefined && rate === undefined && periodText === null) {
      throw badRequest('pin needs at least one of parallelism, rate, period');
    }
    const limits = ctx.accounts.limits(request.account);
    if (parallelism !== undefined && parallelism > limits.max_parallelism) {
      throw limitExceeded(
        `parallelism ${parallelism} is more than the plan's max_parallelism (${limits.max_parallelism})`,
      );
    }
    let periodSec: number | undefined;
    if (periodText !== null) {
      const ms = /^\d+$/.test(periodText)
        ? Number(periodText) * 1000
        : parseDuration(periodText, 'period');
      if (ms <= 0 || ms > 7 * 86_400_000) {
        throw badRequest(`invalid period ${quoteValue(periodText)}: expected 1s to 7d`);
      }
      periodSec = Math.floor(ms / 1000);
    }
    const gate = await update(request.account.id, request.params.key, {
      ...(parallelism === undefined ? {} : { parallelism, pinnedParallelism: true }),
      ...(rate === undefined && periodSec === undefined ? {} : { pinnedRate: true }),
      ...(rate === undefined ? {} : { rate }),
      ...(periodSec === undefined ? {} : { periodSec }),
      resetRate: true,
    });
    return flowControlKeyView(gate);
  });

  app.post<KeyRequest>('/v2/flowControl/:key/unpin', async (request) => {
    const query = queryOf(request.url, ['parallelism', 'rate']);
    const changes: Omit<FlowGateUpdateParams, 'accountId' | 'kind' | 'name' | 'now'> = {};
    if (flag(query, 'parallelism')) changes.pinnedParallelism = false;
    if (flag(query, 'rate')) changes.pinnedRate = false;
    return flowControlKeyView(await update(request.account.id, request.params.key, changes));
  });

  app.post<KeyRequest>('/v2/flowControl/:key/resetRate', async (request) => {
    queryOf(request.url, []);
    return flowControlKeyView(
      await update(request.account.id, request.params.key, { resetRate: true }),
    );
  });

  app.get('/v2/globalParallelism', async (request) => {
    queryOf(request.url, []);
    const account = request.account;
    return {
      parallelismMax: ctx.accounts.limits(account).max_global_parallelism,
      parallelismCount: await ctx.executor.messageCountInFlight({
        accountId: account.id,
        now: ctx.clock.now(),
      }),
    };
  });
}
