/** `GET/DELETE /v2/messages/{id}` and bulk cancel `DELETE /v2/messages?…`. */
import { markFailureCallsCancelled } from '../../engine/workflow-outcomes.js';
import type { FastifyInstance } from 'fastify';
import { notFound } from '../../core/errors.js';
import type { Message } from '../../core/types.js';
import { eventOf } from '../../engine/records.js';
import type { RecordFilter } from '../../storage/driver.js';
import type { ApiContext } from '../context.js';
import { messageJson } from '../presenters.js';
import { parseQuery } from '../query.js';

export const CANCEL_FILTERS = [
  'messageIds',
  'messageId',
  'topicName',
  'queueName',
  'url',
  'host',
  'path',
  'label',
  'flowControlKey',
  'scheduleId',
  'callerIp',
  'callerIP',
  'fromDate',
  'toDate',
] as const;

/**
 * Cancels messages that are not final: removes them and logs CANCEL_REQUESTED and CANCELLED.
 * A delivery already in flight may still reach the destination; its outcome is then ignored.
 */
export async function cancel(
  ctx: ApiContext,
  accountId: string,
  filter: RecordFilter,
  limit?: number,
): Promise<Message[]> {
  const now = ctx.clock.now();
  const removed = await ctx.executor.transaction(async (tx) => {
    const cancelled = await tx.messageDeleteMany({ accountId, filter, limit });
    await markFailureCallsCancelled(tx, cancelled, now);
    if (cancelled.length > 0) {
      await tx.eventInsertMany({
        events: cancelled.flatMap((m) => [
          eventOf(m, 'CANCEL_REQUESTED', now),
          eventOf(m, 'CANCELLED', now),
        ]),
      });
    }
    return cancelled;
  });
  ctx.usage.add(accountId, 'canceled', removed.length, now);
  // A cancelled message may have held a slot of a flow-control key or queue.
  if (removed.length > 0) ctx.onMessagesStored();
  return removed;
}

export function messageRoutes(app: FastifyInstance, ctx: ApiContext): void {
  app.get<{ Params: { id: string } }>('/v2/messages/:id', async (request) => {
    const message = await ctx.executor.messageGet({
      accountId: request.account.id,
      id: request.params.id,
    });
    if (!message)
      throw notFound(
        `message "${request.params.id}" not found (it may be delivered or cancelled already; see /v2/events)`,
      );
    return messageJson(message);
  });

  app.delete<{ Params: { id: string } }>('/v2/messages/:id', async (request) => {
    const cancelled = await cancel(ctx, request.account.id, { messageIds: [request.params.id] });
    if (cancelled.length === 0)
      throw notFound(`message "${request.params.id}" not found or already final`);
    return { cancelled: 1 };
  });

  app.delete('/v2/messages', async (request) => {
    const { filter, count } = parseQuery(searchParams(request.url), {
      filters: CANCEL_FILTERS,
      maxCount: 1_000_000,
    });
    const cancelled = await cancel(ctx, request.account.id, filter, count);
    return { cancelled: cancelled.length };
  });
}

export function searchParams(url: string): URLSearchParams {
  const q = url.indexOf('?');
  return new URLSearchParams(q === -1 ? '' : url.slice(q + 1));
}
