/**
 * FIFO queues: `POST /v2/enqueue/{queue}/{destination}` (a publish into the queue, which is
 * created on first use), `POST /v2/queues` (upsert), `GET /v2/queues`, `GET/DELETE
 * /v2/queues/{name}`, `POST /v2/queues/{name}/pause|resume`. A queue with parallelism n starts
 * a message only while fewer than n of its messages (callbacks included) are started and not
 * final (see core/flow-control.ts).
 */
import type { FastifyInstance } from 'fastify';
import { badRequest, limitExceeded, notFound } from '../../core/errors.js';
import { QUEUE_NAME, queueView } from '../../core/flow-control.js';
import { quoteValue } from '../../core/headers.js';
import { refuseDotSegment } from '../../core/names.js';
import type { Account } from '../../core/types.js';
import type { ApiContext } from '../context.js';
import { jsonBody } from '../json-body.js';
import type { QueueUpsert } from '../schemas/messaging.js';
import { cancel } from './messages.js';
import { handlePublish } from './publish.js';
import { queryOf } from './flow-control.js';

type NameRequest = { Params: { name: string } };

/**
 * Checks the name of a queue a request may create (enqueue, a batch entry's `queue`).
 * @param field how the request named it.
 * @throws FerryError 400 naming `field`.
 */
export function checkQueueName(name: unknown, field = 'queue name'): string {
  if (typeof name !== 'string' || !QUEUE_NAME.test(name)) {
    throw badRequest(
      `invalid ${field} ${quoteValue(String(name))}: use 1 to 200 letters, digits, hyphens, periods and underscores`,
    );
  }
  return refuseDotSegment(name, field);
}

/**
 * Makes sure the account's queue exists, creating it with parallelism 1.
 * @throws FerryError 400 for a bad name, 412 when creating it would pass `max_queues`.
 */
export async function ensureQueue(ctx: ApiContext, account: Account, name: string): Promise<void> {
  checkQueueName(name);
  const existing = await ctx.executor.flowGateGet({ accountId: account.id, kind: 'queue', name });
  if (existing) return;
  const maxQueues = ctx.accounts.limits(account).max_queues;
  const result = await ctx.executor.queueUpsert({
    accountId: account.id,
    name,
    now: ctx.clock.now(),
    maxQueues,
  });
  if (result === 'limit') {
    throw limitExceeded(`queue ${quoteValue(name)} would be more than max_queues (${maxQueues})`);
  }
}

export function queueRoutes(app: FastifyInstance, ctx: ApiContext): void {
  app.post<{ Params: { queue: string } }>('/v2/enqueue/:queue/*', async (request, reply) => {
    const queue = checkQueueName(request.params.queue);
    const path = `/v2/enqueue/${request.raw.url?.split('/')[3] ?? queue}/`;
    const { status, body } = await handlePublish(ctx, request, reply, path, {
      name: queue,
      ensure: () => ensureQueue(ctx, request.account, queue),
    });
    return reply.code(status).send(body);
  });

  app.post('/v2/queues', async (request) => {
    // Shape and types were checked by the route's schema (schemas/messaging.ts) before this.
    const { queueName: name, parallelism, paused } = jsonBody(request) as QueueUpsert;
    refuseDotSegment(name, 'body.queueName');
    const limits = ctx.accounts.limits(request.account);
    if (typeof parallelism === 'number' && parallelism > limits.max_parallelism) {
      throw limitExceeded(
        `parallelism ${parallelism} is more than the plan's max_parallelism (${limits.max_parallelism})`,
      );
    }
    const result = await ctx.executor.queueUpsert({
      accountId: request.account.id,
      name,
      now: ctx.clock.now(),
      maxQueues: limits.max_queues,
      ...(typeof parallelism === 'number' ? { parallelism } : {}),
      ...(typeof paused === 'boolean' ? { paused } : {}),
    });
    if (result === 'limit') {
      throw limitExceeded(
        `queue ${quoteValue(name)} would be more than max_queues (${limits.max_queues})`,
      );
    }
    ctx.onMessagesStored(); // a resumed or widened queue may admit now
    return {};
  });

  app.get('/v2/queues', async (request) => {
    queryOf(request.url, []);
    const queues = await ctx.executor.flowGateList({
      accountId: request.account.id,
      kind: 'queue',
    });
    return queues.map(queueView);
  });

  const get = async (account: Account, name: string) => {
    const queue = await ctx.executor.flowGateGet({ accountId: account.id, kind: 'queue', name });
    if (!queue) throw notFound(`queue ${quoteValue(name)} not found`);
    return queue;
  };

  app.get<NameRequest>('/v2/queues/:name', async (request) =>
    queueView(await get(request.account, request.params.name)),
  );

  /** Deletes the queue and cancels its messages (those in flight may still arrive). */
  app.delete<NameRequest>('/v2/queues/:name', async (request) => {
    const { account } = request;
    const name = request.params.name;
    await get(account, name);
    await cancel(ctx, account.id, { queueNames: [name] });
    await ctx.executor.flowGateDelete({ accountId: account.id, kind: 'queue', name });
    return {};
  });

  for (const action of ['pause', 'resume'] as const) {
    app.post<NameRequest>(`/v2/queues/:name/${action}`, async (request) => {
      const gate = await ctx.executor.flowGateUpdate({
        accountId: request.account.id,
        kind: 'queue',
        name: request.params.name,
        now: ctx.clock.now(),
        paused: action === 'pause',
      });
      if (!gate) throw notFound(`queue ${quoteValue(request.params.name)} not found`);
      ctx.onMessagesStored();
      return {};
    });
  }
}
