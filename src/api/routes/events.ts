/**
 * The events log: `GET /v2/events` → `{cursor?, events}` and `GET /v2/logs` → `{cursor?, logs}`
 * (no `cursor` on the last page).
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { ApiContext } from '../context.js';
import { BODY_CUT_PARAM, boundedPage, itemBytes, parseBodyCut, sendPage } from '../list-page.js';
import { eventJson } from '../presenters.js';
import { parseQuery } from '../query.js';
import { searchParams } from './messages.js';

const EVENT_FILTERS = [
  'messageId',
  'messageIds',
  'state',
  'url',
  'topicName',
  'scheduleId',
  'queueName',
  'label',
  'host',
  'path',
  'flowControlKey',
  'callerIp',
  'callerIP',
  'fromDate',
  'toDate',
] as const;

export function eventRoutes(app: FastifyInstance, ctx: ApiContext): void {
  const list =
    (key: 'events' | 'logs') =>
    async (request: { url: string; account: { id: string } }, reply: FastifyReply) => {
      const query = searchParams(request.url);
      const { filter, cursor, count } = parseQuery(query, {
        filters: EVENT_FILTERS,
        maxCount: 1000,
        cursor: true,
        extra: ['order', 'groupBy', BODY_CUT_PARAM],
      });
      const bodyCut = parseBodyCut(query);
      const page = await boundedPage({
        count: count ?? 100,
        cursor,
        fetch: (after, n) =>
          ctx.executor.eventList({
            accountId: request.account.id,
            filter,
            cursor: after,
            count: n,
            bodyCut,
          }),
        cursorOf: (event) => String(event.id),
        present: eventJson,
        itemBytes: itemBytes(bodyCut),
      });
      return sendPage(reply, key, page);
    };
  app.get('/v2/events', list('events'));
  app.get('/v2/logs', list('logs'));
}
