/**
 * URL groups ("topics"): add and remove endpoints, list, get, delete, default headers. Changes
 * run in a transaction under the account's URL-group lock, so concurrent requests (on any node)
 * never lose an endpoint or exceed `max_topics`.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { limitExceeded, notFound } from '../../core/errors.js';
import { quoteValue } from '../../core/headers.js';
import { refuseDotSegment } from '../../core/names.js';
import { parsePublishSettings } from '../../core/publish-request.js';
import type { UrlGroup } from '../../core/types.js';
import {
  checkName,
  endpointsAfterRemoving,
  parseDefaultHeaders,
  parseEndpointsToAdd,
  parseEndpointsToRemove,
  withEndpointsAdded,
} from '../../core/url-groups.js';
import type { Executor } from '../../storage/driver.js';
import type { ApiContext } from '../context.js';
import { checkCallbacksAllowed, checkDestinationAllowed } from '../destination-guard.js';
import { jsonBody } from '../json-body.js';
import { urlGroupJson } from '../presenters.js';

type NameRequest = FastifyRequest<{ Params: { name: string } }>;

const groupNotFound = (name: string) => notFound(`URL group ${quoteValue(name)} not found`);

export function topicRoutes(app: FastifyInstance, ctx: ApiContext): void {
  /** Runs `fn` on the named group of the request's account, locked against concurrent changes. */
  const change = <T>(
    request: NameRequest,
    fn: (tx: Executor, current: UrlGroup | undefined, name: string) => Promise<T>,
  ): Promise<T> => {
    const accountId = request.account.id;
    const name = checkName(request.params.name, 'URL group name');
    return ctx.executor.transaction(async (tx) => {
      await tx.urlGroupLock({ accountId });
      return fn(tx, await tx.urlGroupGet({ accountId, name }), name);
    });
  };

  app.post<{ Params: { name: string } }>('/v2/topics/:name/endpoints', async (request) => {
    // This call creates the group when it is new: a name no URL could address is refused.
    refuseDotSegment(request.params.name, 'URL group name');
    const endpoints = parseEndpointsToAdd(jsonBody(request));
    endpoints.forEach((e, i) =>
      checkDestinationAllowed(e.url, ctx.production, `endpoints[${i}].url`),
    );
    const plan = ctx.accounts.limits(request.account);
    const accountId = request.account.id;
    const group = await change(request, async (tx, current, name) => {
      if (!current) {
        const count = await tx.urlGroupCount({ accountId });
        if (count >= plan.max_topics) {
          throw limitExceeded(
            `cannot create URL group ${quoteValue(name)}: the account has ${count} URL groups, the plan's max_topics is ${plan.max_topics}`,
          );
        }
      }
      const now = ctx.clock.now();
      const next = withEndpointsAdded({ current, accountId, name, endpoints, plan, now });
      await tx.urlGroupPut({ group: next });
      return next;
    });
    return urlGroupJson(group, ctx.prefix);
  });

  app.delete<{ Params: { name: string } }>('/v2/topics/:name/endpoints', async (request) => {
    const refs = parseEndpointsToRemove(jsonBody(request));
    const accountId = request.account.id;
    const group = await change(request, async (tx, current, name) => {
      if (!current) throw groupNotFound(name);
      const endpoints = endpointsAfterRemoving(current, refs);
      if (endpoints.length === 0) {
        await tx.urlGroupDelete({ accountId, name });
        return undefined;
      }
      const next = { ...current, endpoints, updatedAt: ctx.clock.now() };
      await tx.urlGroupPut({ group: next });
      return next;
    });
    return group ? urlGroupJson(group, ctx.prefix) : { deleted: true };
  });

  app.patch<{ Params: { name: string } }>('/v2/topics/:name', async (request) => {
    const headers = parseDefaultHeaders(jsonBody(request));
    // The defaults must make a valid publish on their own, so a bad one fails here, not on
    // every later publish to the group.
    const settings = parsePublishSettings({
      prefix: ctx.prefix,
      headers: {},
      query: new URLSearchParams(),
      defaults: headers,
      newDefaults: true,
      plan: ctx.accounts.limits(request.account),
      now: ctx.clock.now(),
    });
    checkCallbacksAllowed(settings, ctx.production, ctx.prefix);
    const group = await change(request, async (tx, current, name) => {
      if (!current) throw groupNotFound(name);
      const next: UrlGroup = { ...current, updatedAt: ctx.clock.now() };
      if (Object.keys(headers).length > 0) next.headers = headers;
      else delete next.headers;
      await tx.urlGroupPut({ group: next });
      return next;
    });
    return urlGroupJson(group, ctx.prefix);
  });

  app.get('/v2/topics', async (request) => {
    const groups = await ctx.executor.urlGroupList({ accountId: request.account.id });
    return groups.map((g) => urlGroupJson(g, ctx.prefix));
  });

  app.get<{ Params: { name: string } }>('/v2/topics/:name', async (request) => {
    const name = checkName(request.params.name, 'URL group name');
    const group = await ctx.executor.urlGroupGet({ accountId: request.account.id, name });
    if (!group) throw groupNotFound(name);
    return urlGroupJson(group, ctx.prefix);
  });

  app.delete<{ Params: { name: string } }>('/v2/topics/:name', async (request) => {
    const name = checkName(request.params.name, 'URL group name');
    const deleted = await ctx.executor.urlGroupDelete({ accountId: request.account.id, name });
    if (!deleted) throw groupNotFound(name);
    return { deleted: true };
  });
}
