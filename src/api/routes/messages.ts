/** `GET/DELETE /v2/messages/{id}` and bulk cancel `DELETE /v2/messages?…`. */
import { markFailureCallsCancelled } from '../../engine/workflow-outcomes.js';
import { deleteCancelledWaits } from '../../engine/workflow-events.js';
import type { FastifyInstance } from 'fastify';
import { notFound } from '../../core/errors.js';
import { eventOf } from '../../engine/records.js';
import type { RecordFilter } from '../../storage/driver.js';
import type { ApiContext } from '../context.js';
import { messageJson, messageStateJson } from '../presenters.js';
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
 * Messages a bulk cancel removes per transaction. One transaction for every match held SQLite's
 * only writer for 4.9 s at 50,000 messages (no publish or delivery meanwhile) and ran past
 * PostgreSQL's `--database-timeout` (a 503, nothing cancelled). 1,000 take about 0.1 s each
 * here, and the requests waiting for the writer go between two of them: 50,000 took 6 s on
 * either storage, publishes meanwhile answered within 0.4 s (SQLite) and 0.1 s (PostgreSQL).
 */
export const CANCEL_CHUNK = 1_000;

/**
 * Cancels every message that is not final and matches `filter`: removes them and logs
 * CANCEL_REQUESTED and CANCELLED; answers how many. Works in transactions of `CANCEL_CHUNK`
 * messages in id order, each continuing after the last id of the one before (`afterId`), until
 * one finds fewer: so a request that fails midway has cancelled the chunks before it, and a
 * message that matches and is published meanwhile may be cancelled too. A delivery already in
 * flight may still reach the destination; its outcome is then ignored.
 */
export async function cancel(
  ctx: ApiContext,
  accountId: string,
  filter: RecordFilter,
): Promise<number> {
  let total = 0;
  let afterId = '';
  for (;;) {
    const ids = await cancelChunk(ctx, accountId, filter, afterId);
    total += ids.length;
    if (ids.length < CANCEL_CHUNK) return total;
    // Any id of the chunk is a safe bound (every row left sorts after all of them), so a
    // storage collation that orders ids unlike JavaScript only makes the next chunk start early.
    afterId = ids.reduce((max, id) => (id > max ? id : max));
  }
}

async function cancelChunk(
  ctx: ApiContext,
  accountId: string,
  filter: RecordFilter,
  afterId: string,
): Promise<string[]> {
  const now = ctx.clock.now();
  const removed = await ctx.executor.transaction(async (tx) => {
    const cancelled = await tx.messageDeleteMany({
      accountId,
      filter,
      limit: CANCEL_CHUNK,
      afterId,
    });
    await markFailureCallsCancelled(tx, cancelled, now);
    await deleteCancelledWaits(tx, cancelled);
    if (cancelled.length > 0) {
      await tx.eventInsertMany({
        events: cancelled.flatMap((m) => [
          eventOf(m, 'CANCEL_REQUESTED', now),
          eventOf(m, 'CANCELLED', now),
        ]),
      });
    }
    return cancelled.map((m) => m.id);
  });
  ctx.usage.add(accountId, 'canceled', removed.length, now);
  // A cancelled message may have held a slot of a flow-control key or queue.
  if (removed.length > 0) ctx.onMessagesStored();
  return removed;
}

export function messageRoutes(app: FastifyInstance, ctx: ApiContext): void {
  app.get<{ Params: { id: string } }>('/v2/messages/:id', async (request) => {
    const found = await ctx.executor.messageView({
      accountId: request.account.id,
      id: request.params.id,
      now: ctx.clock.now(),
    });
    if (!found)
      throw notFound(
        `message "${request.params.id}" not found (it may be delivered or cancelled already; see /v2/events)`,
      );
    return { ...messageJson(found.message), ...messageStateJson(found.message, found.state) };
  });

  app.delete<{ Params: { id: string } }>('/v2/messages/:id', async (request) => {
    const cancelled = await cancel(ctx, request.account.id, { messageIds: [request.params.id] });
    if (cancelled === 0)
      throw notFound(`message "${request.params.id}" not found or already final`);
    return { cancelled: 1 };
  });

  app.delete('/v2/messages', async (request) => {
    // `count` is accepted and ignored: every match is cancelled. @upstash/qstash 2.12 sends
    // `count=100` with every filter or `all` cancel and documents that the server ignores it.
    const { filter } = parseQuery(searchParams(request.url), {
      filters: CANCEL_FILTERS,
      extra: ['count'],
    });
    return { cancelled: await cancel(ctx, request.account.id, filter) };
  });
}

export function searchParams(url: string): URLSearchParams {
  const q = url.indexOf('?');
  return new URLSearchParams(q === -1 ? '' : url.slice(q + 1));
}
