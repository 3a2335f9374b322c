/** The dead-letter queue: list, get, delete (one or by filter), retry (one or by filter). */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { notFound } from '../../core/errors.js';
import { parsePublishSettings } from '../../core/publish-request.js';
import type { Message } from '../../core/types.js';
import { retryDlqEntries, type RetryOverride } from '../../engine/dlq-retry.js';
import type { RecordFilter } from '../../storage/driver.js';
import type { ApiContext } from '../context.js';
import { checkCallbacksAllowed } from '../destination-guard.js';
import { admitRequest } from '../limits.js';
import { checkRequestCaps } from '../request-caps.js';
import { BODY_CUT_PARAM, boundedPage, itemBytes, parseBodyCut, sendPage } from '../list-page.js';
import { dlqJson } from '../presenters.js';
import { cursorField, parseQuery, type ParsedQuery } from '../query.js';
import { jsonBody } from '../json-body.js';
import type { DlqIdsBody } from '../schemas/messaging.js';
import { quoteValue } from '../../core/headers.js';
import { searchParams } from './messages.js';
import { listWorkflowDlq } from './workflows.js';

const DLQ_FILTERS = [
  'dlqIds',
  'messageId',
  'url',
  'topicName',
  'scheduleId',
  'queueName',
  'label',
  'flowControlKey',
  'responseStatus',
  'callerIp',
  'callerIP',
  'fromDate',
  'toDate',
] as const;

const DEFAULT_COUNT = 100;

function dlqQuery(url: string, extra: string[] = []): ParsedQuery {
  return parseQuery(searchParams(url), {
    filters: DLQ_FILTERS,
    maxCount: 100,
    cursor: { idPrefix: 'dlq' },
    extra: ['order', 'source', ...extra],
  });
}

/**
 * Publish headers on a retry call override the stored message: only the settings actually sent
 * change; everything else is retried as it was.
 */
function overrideFrom(request: FastifyRequest, ctx: ApiContext): RetryOverride {
  const prefix = ctx.prefix.toLowerCase();
  const query = searchParams(request.url);
  // Query names match case-insensitively, as on publish.
  const queryNames = new Set([...query.keys()].map((k) => k.toLowerCase()));
  const sent = (name: string): boolean => {
    const key = `${prefix}-${name}`;
    return request.headers[key] !== undefined || queryNames.has(key);
  };
  const forwards =
    [...Object.keys(request.headers), ...queryNames].some((h) =>
      h.startsWith(`${prefix}-forward-`),
    ) ||
    request.headers['content-type'] !== undefined ||
    sent('header-forward');
  const limits = ctx.accounts.limits(request.account);
  // Read once up front, so a bad override (or a private callback URL in production mode) is a
  // 400 before any entry is retried.
  checkCallbacksAllowed(
    parsePublishSettings({
      prefix: ctx.prefix,
      headers: request.headers,
      query,
      plan: limits,
      now: ctx.clock.now(),
    }),
    ctx.production,
    ctx.prefix,
  );
  return (stored: Message, now: number): Message => {
    const s = parsePublishSettings({
      prefix: ctx.prefix,
      headers: request.headers,
      query,
      plan: limits,
      now,
    });
    const spec = { ...stored.spec };
    if (sent('method')) spec.method = s.method;
    if (forwards) spec.headers = { ...stored.spec.headers, ...s.headers };
    if (sent('label')) spec.labels = s.labels;
    if (sent('retry-delay')) spec.retryDelayExpression = s.retryDelayExpression;
    if (sent('timeout')) spec.timeoutMs = s.timeoutMs;
    if (sent('flow-control-key')) spec.flowControl = s.flowControl;
    if (sent('redact-fields')) spec.redact = s.redact;
    if (sent('callback')) spec.callback = s.callback;
    if (sent('failure-callback')) spec.failureCallback = s.failureCallback;
    return {
      ...stored,
      spec,
      maxRetries: sent('retries') ? s.retries : stored.maxRetries,
      notBefore: sent('delay') || sent('not-before') ? s.notBefore : now,
    };
  };
}

export function dlqRoutes(app: FastifyInstance, ctx: ApiContext): void {
  const page = async (
    accountId: string,
    filter: RecordFilter,
    cursor: string | undefined,
    count: number | undefined,
    bodyCut?: number,
  ) => ctx.executor.dlqList({ accountId, filter, cursor, count: count ?? DEFAULT_COUNT, bodyCut });

  app.get('/v2/dlq', async (request, reply) => {
    // The workflow SDK lists the workflow DLQ here, with its own filters.
    if (searchParams(request.url).get('source') === 'workflow') {
      return listWorkflowDlq(ctx, request, reply);
    }
    const { filter, cursor, count } = dlqQuery(request.url, [BODY_CUT_PARAM]);
    const bodyCut = parseBodyCut(searchParams(request.url));
    const result = await boundedPage({
      count: count ?? DEFAULT_COUNT,
      cursor,
      fetch: (after, n) => page(request.account.id, filter, after, n, bodyCut),
      cursorOf: (entry) => entry.dlqId,
      present: dlqJson,
      itemBytes: itemBytes(bodyCut),
    });
    return sendPage(reply, 'messages', result);
  });

  app.get<{ Params: { dlqId: string } }>('/v2/dlq/:dlqId', async (request) => {
    const entry = await ctx.executor.dlqGet({
      accountId: request.account.id,
      dlqId: request.params.dlqId,
    });
    if (!entry) throw notFound(`DLQ entry "${request.params.dlqId}" not found`);
    return dlqJson(entry);
  });

  app.delete<{ Params: { dlqId: string } }>('/v2/dlq/:dlqId', async (request) => {
    const deleted = await ctx.executor.dlqDeleteMany({
      accountId: request.account.id,
      dlqIds: [request.params.dlqId],
    });
    if (deleted === 0) throw notFound(`DLQ entry "${request.params.dlqId}" not found`);
    return { deleted };
  });

  app.delete('/v2/dlq', async (request) => {
    const { filter, cursor, count } = dlqQuery(request.url);
    // Only the ids are needed: no body is read.
    const result = await page(request.account.id, filter, cursor, count, 0);
    const deleted = await ctx.executor.dlqDeleteMany({
      accountId: request.account.id,
      dlqIds: result.items.map((e) => e.dlqId),
    });
    return { deleted, ...cursorField(result.cursor) };
  });

  app.post<{ Params: { dlqId: string } }>('/v2/dlq/retry/:dlqId', async (request, reply) => {
    const entry = await ctx.executor.dlqGet({
      accountId: request.account.id,
      dlqId: request.params.dlqId,
    });
    if (!entry) throw notFound(`DLQ entry "${request.params.dlqId}" not found`);
    const override = overrideFrom(request, ctx);
    await admitRequest(ctx, request, reply, 1);
    const [message] = await retryDlqEntries({
      executor: ctx.executor,
      clock: ctx.clock,
      accountId: request.account.id,
      entries: [entry],
      override,
    });
    ctx.onMessagesStored();
    ctx.usage.add(request.account.id, 'messages', 1);
    return reply.code(201).send({ messageId: message?.id });
  });

  // Upstash's "Multiple IDs" form: `{"dlqIds": [...]}` in the body. Every id must be in the DLQ
  // (404 naming the first that is not) before any entry is published again; the answers follow
  // the order of the ids given.
  app.post('/v2/dlq/retry/multi', async (request, reply) => {
    // Shape and size were checked by the route's schema (schemas/messaging.ts) before this.
    const dlqIds = [...new Set((jsonBody(request) as DlqIdsBody).dlqIds)];
    const override = overrideFrom(request, ctx);
    const found = await page(request.account.id, { dlqIds }, undefined, dlqIds.length);
    const byId = new Map(found.items.map((entry) => [entry.dlqId, entry]));
    const missing = dlqIds.find((id) => !byId.has(id));
    if (missing !== undefined) throw notFound(`DLQ entry ${quoteValue(missing)} not found`);
    const entries = dlqIds.map((id) => byId.get(id)!);
    checkRequestCaps(
      ctx.requestCaps,
      entries.map((entry) => entry.message),
    );
    await admitRequest(ctx, request, reply, entries.length);
    const messages = await retryDlqEntries({
      executor: ctx.executor,
      clock: ctx.clock,
      accountId: request.account.id,
      entries,
      override,
    });
    ctx.onMessagesStored();
    ctx.usage.add(request.account.id, 'messages', messages.length);
    return reply.code(201).send({ responses: messages.map((m) => ({ messageId: m.id })) });
  });

  app.post('/v2/dlq/retry', async (request, reply) => {
    const { filter, cursor, count } = dlqQuery(request.url);
    const override = overrideFrom(request, ctx);
    const result = await page(request.account.id, filter, cursor, count);
    checkRequestCaps(
      ctx.requestCaps,
      result.items.map((entry) => entry.message),
    );
    if (result.items.length > 0) await admitRequest(ctx, request, reply, result.items.length);
    const messages = await retryDlqEntries({
      executor: ctx.executor,
      clock: ctx.clock,
      accountId: request.account.id,
      entries: result.items,
      override,
    });
    if (messages.length > 0) ctx.onMessagesStored();
    ctx.usage.add(request.account.id, 'messages', messages.length);
    return reply.code(201).send({
      ...cursorField(result.cursor),
      responses: messages.map((m) => ({ messageId: m.id })),
    });
  });
}
