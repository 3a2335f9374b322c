/**
 * `POST /v2/publish/{destination}`: validate, store durably (group commit), answer. The
 * destination is everything after `/v2/publish/` in the raw URL, so `https://` survives and the
 * destination's own query string is kept (minus Ferry's own parameters). A URL-group destination
 * makes one message per endpoint, all stored in one transaction.
 */
import { checkRequestCaps } from '../request-caps.js';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { notFound, tooLarge } from '../../core/errors.js';
import { buildMessage } from '../../core/build-message.js';
import { parseDestination, type Destination } from '../../core/destination.js';
import { quoteValue } from '../../core/headers.js';
import { hopsOf } from '../../core/hops.js';
import {
  contentDeduplicationKey,
  parsePublishSettings,
  type IncomingHeaders,
  type PublishSettings,
} from '../../core/publish-request.js';
import type { PlanLimits } from '../../core/plans.js';
import type { Account, Message } from '../../core/types.js';
import type { PublishItem, PublishResult } from '../../engine/publisher.js';
import { dropHopByHopForwards, prepareWorkflowPublish } from '../workflow-publish.js';
import { admitRequest } from '../limits.js';
import type { ApiContext } from '../context.js';
import { checkCallbacksAllowed, checkDestinationAllowed } from '../destination-guard.js';

/** Moved to core (the scheduler builds messages too); re-exported for existing importers. */
export { buildMessage };

const EMPTY = new Uint8Array(0);

/** @throws FerryError 413 when `bytes` is larger than the plan's `max_message_size`. */
export function checkBodySize(bytes: Uint8Array, limits: PlanLimits): Uint8Array {
  if (bytes.byteLength > limits.max_message_size) {
    throw tooLarge(
      `body of ${bytes.byteLength} bytes is larger than max_message_size (${limits.max_message_size})`,
    );
  }
  return bytes;
}

export function bodyOf(request: FastifyRequest, limits: PlanLimits): Uint8Array {
  const body = request.body;
  return checkBodySize(body instanceof Uint8Array ? body : EMPTY, limits);
}

/**
 * The destination of a `…/{destination}` route (publish, schedules): everything after `path` in
 * the raw request URL, undecoded, with Ferry's own query parameters apart (`parseDestination`).
 */
export function destinationOf(
  request: FastifyRequest,
  path: string,
  prefix: string,
): ReturnType<typeof parseDestination> {
  const raw = request.raw.url ?? request.url;
  const start = raw.indexOf(path) + path.length;
  const q = raw.indexOf('?', start);
  return parseDestination({
    rawPath: q === -1 ? raw.slice(start) : raw.slice(start, q),
    rawQuery: q === -1 ? '' : raw.slice(q + 1),
    prefix,
  });
}

export function dedupKeyOf(settings: PublishSettings, message: Message): string | undefined {
  if (settings.deduplicationId !== undefined) {
    // One id covers each endpoint of a group once: scoped by the URL for a group message.
    return message.topicName === undefined
      ? `id:${settings.deduplicationId}`
      : `id:${settings.deduplicationId}\n${message.url}`;
  }
  if (!settings.contentBasedDeduplication) return undefined;
  return `content:${contentDeduplicationKey({ url: message.url, body: message.body, headers: message.spec.headers })}`;
}

/** The messages one publish makes: one for a URL, one per endpoint for a URL group. */
export interface PreparedPublish {
  /** The URL group's name for a group destination (answered with an array). */
  topicName?: string;
  items: PublishItem[];
}

/**
 * Validates a publish and builds its messages: the settings (with a URL group's default
 * headers), the body limit, the production-mode address check, and the deduplication keys.
 *
 * @throws FerryError 400/412/413 for bad input; 404 for a URL group that does not exist.
 */
export async function preparePublish(
  ctx: ApiContext,
  p: {
    account: Account;
    destination: Destination;
    headers: IncomingHeaders;
    query: URLSearchParams;
    body: Uint8Array;
    callerIp: string;
    /** The request's `hopsOf`: set when it is one of Ferry's deliveries. */
    hops?: number;
  },
): Promise<PreparedPublish> {
  const { account, destination } = p;
  const plan = ctx.accounts.limits(account);
  const group =
    destination.kind === 'group'
      ? await ctx.executor.urlGroupGet({ accountId: account.id, name: destination.name })
      : undefined;
  if (destination.kind === 'group' && !group) {
    throw notFound(`URL group ${quoteValue(destination.name)} not found`);
  }
  const now = ctx.clock.now();
  const headers = dropHopByHopForwards(ctx.prefix, p.headers);
  const settings = parsePublishSettings({
    prefix: ctx.prefix,
    headers,
    query: p.query,
    defaults: group?.headers,
    plan,
    now,
  });
  checkCallbacksAllowed(settings, ctx.production, ctx.prefix);
  const workflow = await prepareWorkflowPublish({
    executor: ctx.executor,
    prefix: ctx.prefix,
    account,
    plan,
    headers,
    settings,
    url: destination.kind === 'url' ? destination.url : undefined,
    callerIp: p.callerIp,
    production: ctx.production,
    now,
    body: p.body,
  });
  const targets = group
    ? group.endpoints
    : [{ url: destination.kind === 'url' ? destination.url : '' }];
  const items = targets.map((target) => {
    checkDestinationAllowed(target.url, ctx.production);
    const message = buildMessage({
      account,
      url: target.url,
      settings,
      body: workflow?.body ?? p.body,
      callerIp: p.callerIp,
      now,
    });
    if (p.hops !== undefined) message.spec.hops = p.hops;
    if (group) {
      message.topicName = group.name;
      if (target.name !== undefined) message.endpointName = target.name;
    }
    const item: PublishItem = { message, dedupKey: dedupKeyOf(settings, message) };
    if (workflow) {
      message.spec.workflow = workflow.message;
      item.workflow = workflow.write;
    }
    return item;
  });
  return group ? { topicName: group.name, items } : { items };
}

/**
 * The answer to a publish: `{messageId, deduplicated}` for a URL (`202` for a duplicate, as
 * QStash answers), `[{messageId, url, deduplicated}]` for a group.
 */
export function publishResponse(
  prepared: PreparedPublish,
  results: PublishResult[],
): { status: number; body: unknown } {
  if (prepared.topicName !== undefined) {
    const body = results.map((r, i) => ({
      messageId: r.messageId,
      url: prepared.items[i]?.message.url,
      deduplicated: r.deduplicated,
    }));
    return { status: 200, body };
  }
  const [result] = results;
  if (!result) throw new Error('publisher returned no result');
  const body = { messageId: result.messageId, deduplicated: result.deduplicated };
  return { status: result.deduplicated ? 202 : 200, body };
}

/**
 * Handles a publish route: `/v2/publish/{destination}`, or `/v2/enqueue/{queue}/{destination}`
 * with `queueName` (each message then joins the queue, see routes/queues.ts).
 */
export async function handlePublish(
  ctx: ApiContext,
  request: FastifyRequest,
  reply: FastifyReply,
  path: string,
  queue?: { name: string; ensure: () => Promise<void> },
): Promise<{ status: number; body: unknown }> {
  const account = request.account;
  const limits = ctx.accounts.limits(account);
  const { destination, query } = destinationOf(request, path, ctx.prefix);
  const prepared = await preparePublish(ctx, {
    account,
    destination,
    headers: request.headers,
    query,
    body: bodyOf(request, limits),
    callerIp: request.ip,
    hops: hopsOf(ctx.prefix, request.headers),
  });
  checkRequestCaps(
    ctx.requestCaps,
    prepared.items.map((item) => item.message),
  );
  await admitRequest(ctx, request, reply, prepared.items.length);
  const results = await ctx.admission.run(prepared.items.length, async () => {
    if (queue) {
      // Only a valid, admitted publish creates its queue.
      await queue.ensure();
      for (const item of prepared.items) item.message.queueName = queue.name;
    }
    return ctx.publisher.publish(prepared.items);
  });
  return publishResponse(prepared, results);
}

export function publishRoutes(app: FastifyInstance, ctx: ApiContext): void {
  app.post('/v2/publish/*', async (request, reply) => {
    const { status, body } = await handlePublish(ctx, request, reply, '/v2/publish/');
    return reply.code(status).send(body);
  });
}
