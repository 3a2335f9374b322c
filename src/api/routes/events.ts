/**
 * The events log: `GET /v2/events` → `{cursor?, events}` and `GET /v2/logs` → `{cursor?, logs}`
 * (no `cursor` on the last page).
 */
import type { FastifyInstance } from 'fastify';
import type { ApiContext } from '../context.js';
import { eventJson } from '../presenters.js';
import { cursorField, parseQuery } from '../query.js';
import { searchParams } from './messages.js';

const EVENT_FILTERS = [
  'messageId',
  'state',
  'url',
  'topicName',
  'scheduleId',
  'queueName',
  'label',
  'host',
  'path',
  'fromDate',
  'toDate',
] as const;

export function eventRoutes(app: FastifyInstance, ctx: ApiContext): void {
  const list =
    (key: 'events' | 'logs') => async (request: { url: string; account: { id: string } }) => {
      const { filter, cursor, count } = parseQuery(searchParams(request.url), {
        filters: EVENT_FILTERS,
        maxCount: 1000,
        cursor: true,
        extra: ['order', 'groupBy'],
      });
      const page = await ctx.executor.eventList({
        accountId: request.account.id,
        filter,
        cursor,
        count: count ?? 100,
      });
      return { ...cursorField(page.cursor), [key]: page.items.map(eventJson) };
    };
  app.get('/v2/events', list('events'));
  app.get('/v2/logs', list('logs'));
}
