/**
 * Search indexes of the calling management user: the account-side record (Ferry runs no vector
 * database). Tokens are stored hashed and sealed (see secrets.ts); every answer shows them.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { notFound } from '../../core/errors.js';
import {
  SEARCH_INDEX_REGIONS,
  SEARCH_INDEX_TYPES,
  type SearchIndex,
} from '../../core/management.js';
import { parseIndexName } from '../../core/search-index.js';
import { periodWindow, seriesPoints, type DataPoint } from '../../core/usage-stats.js';
import { jsonBody, oneOf } from './body.js';
import type { MgmtContext } from './context.js';
import { searchIndexJson } from './presenters.js';
import { indexTokens, newIndexTokens, type IndexTokens } from './secrets.js';

type IdRequest = FastifyRequest<{ Params: { id: string } }>;

export function searchRoutes(app: FastifyInstance, ctx: MgmtContext): void {
  /** The index `id` when the caller owns it, else 404. */
  const owned = async (request: IdRequest): Promise<SearchIndex> => {
    const index = await ctx.executor.searchIndexGet({
      ownerId: request.mgmtUser.id,
      id: request.params.id,
    });
    if (!index) throw notFound(`search index "${request.params.id}" not found`);
    return index;
  };

  /**
   * Requests per minute over the last hour, from the index's recorded `index_requests`; empty
   * when it has served none (nothing is invented).
   */
  const throughput = async (index: SearchIndex): Promise<DataPoint[]> => {
    const window = periodWindow('1h', ctx.clock.now());
    const buckets = await ctx.executor.usageSumByStep({
      subjectId: index.id,
      ...window,
      metrics: ['index_requests'],
    });
    return buckets.length === 0 ? [] : seriesPoints(window, buckets, 'index_requests');
  };

  const json = async (
    request: FastifyRequest,
    index: SearchIndex,
    tokens: IndexTokens = indexTokens(ctx.secrets, ctx.logger, index),
  ): Promise<Record<string, unknown>> =>
    searchIndexJson({
      index,
      owner: request.mgmtUser,
      throughput: await throughput(index),
      tokens,
    });

  app.post('/v2/search', async (request) => {
    const body = jsonBody(request, ['name', 'region', 'type']);
    const name = parseIndexName(body.name);
    const region = oneOf('region', body.region, SEARCH_INDEX_REGIONS);
    const type = oneOf('type', body.type, SEARCH_INDEX_TYPES);
    const id = randomUUID();
    const { token, readOnlyToken, stored } = newIndexTokens(ctx.secrets, id);
    const index: SearchIndex = {
      id,
      ownerId: request.mgmtUser.id,
      name,
      endpoint: `${name.toLowerCase().replace(/_/g, '-')}-${randomBytes(5).toString('hex')}`,
      type,
      region,
      ...stored,
      createdAt: ctx.clock.now(),
    };
    await ctx.executor.searchIndexInsert({ index });
    return json(request, index, { token, readOnlyToken });
  });

  app.get('/v2/search', async (request) => {
    const indexes = await ctx.executor.searchIndexList({ ownerId: request.mgmtUser.id });
    return Promise.all(indexes.map((index) => json(request, index)));
  });

  app.get<{ Params: { id: string } }>('/v2/search/:id', async (request) =>
    json(request, await owned(request)),
  );

  app.delete<{ Params: { id: string } }>('/v2/search/:id', async (request) => {
    const index = await owned(request);
    const answer = await json(request, index);
    await ctx.executor.searchIndexDelete({ ownerId: request.mgmtUser.id, id: index.id });
    return answer;
  });

  app.post<{ Params: { id: string } }>('/v2/search/:id/rename', async (request) => {
    const index = await owned(request);
    const name = parseIndexName(jsonBody(request, ['name']).name);
    await ctx.executor.searchIndexUpdate({ ownerId: index.ownerId, id: index.id, name });
    return json(request, { ...index, name });
  });

  app.post<{ Params: { id: string } }>('/v2/search/:id/reset-password', async (request) => {
    const index = await owned(request);
    jsonBody(request, []);
    const { token, readOnlyToken, stored } = newIndexTokens(ctx.secrets, index.id);
    await ctx.executor.searchIndexUpdate({ ownerId: index.ownerId, id: index.id, ...stored });
    return json(request, { ...index, ...stored }, { token, readOnlyToken });
  });
}
