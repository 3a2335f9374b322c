/**
 * Workflow webhooks (`context.createWebhook` / `context.waitForWebhook`):
 * `{any method} /v2/workflows/hooks/{userId}/{workflowRunId}/{eventId}`, without a token. The
 * URL is the capability: the SDK builds it from the account id, the run id and a random event id
 * it recorded in the run's history as its `CreateWebhook` step. Ferry accepts a request only for
 * a running run of that account whose history created that event id, so neither a run id alone
 * nor an account id alone opens anything; every other request gets the same 404. The request
 * wakes the run's `waitForWebhook` (or is kept until it comes, as a run-scoped notify) with the
 * request as the SDK decodes it. See docs/workflows.md.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { notFound, tooLarge } from '../../core/errors.js';
import type { Account, HeaderMap } from '../../core/types.js';
import { parseStepBody } from '../../core/workflow.js';
import { checkEventId } from '../../core/workflow-events.js';
import { notifyRun } from '../../engine/workflow-events.js';
import type { ApiContext } from '../context.js';
import { bodyOf } from './publish.js';
import { meterNotified } from './workflow-events.js';

type HookRequest = FastifyRequest<{
  Params: { userId: string; runId: string; eventId: string };
}>;

const NOT_FOUND = 'no workflow run waits on this webhook';

/** Whether the run's history has a `CreateWebhook` step that made `eventId`. */
function createdWebhook(steps: { body: Uint8Array }[], eventId: string): boolean {
  return steps.some((step) => {
    const parsed = parseStepBody(step.body);
    if (parsed?.stepType !== 'CreateWebhook' || typeof parsed.out !== 'string') return false;
    try {
      return (JSON.parse(parsed.out) as { eventId?: unknown }).eventId === eventId;
    } catch {
      return false;
    }
  });
}

/** The request as the SDK's `waitForWebhook` decodes it: the body base64, headers as lists. */
function hookEventData(request: FastifyRequest, body: Uint8Array): Uint8Array {
  const header: HeaderMap = {};
  for (const [name, value] of Object.entries(request.headers)) {
    if (value === undefined) continue;
    header[name] = Array.isArray(value) ? value : [value];
  }
  return Buffer.from(
    JSON.stringify({
      method: request.method,
      proto: request.protocol,
      host: request.headers.host ?? '',
      url: request.url,
      header,
      body: Buffer.from(body).toString('base64'),
    }),
  );
}

/**
 * Registers the webhook route on `app`, outside the token-authenticated routes (`app` must not
 * have the auth hook).
 */
export function workflowHookRoutes(app: FastifyInstance, ctx: ApiContext): void {
  /** The account each request found in `preParsing`, for its handler. */
  const found = new WeakMap<FastifyRequest, Account>();
  app.route<{ Params: { userId: string; runId: string; eventId: string } }>({
    // Every method a webhook sender may use (HEAD comes with GET). Not `app.all`: it adds
    // QUERY, which OpenAPI 3.1, and so the API document, cannot describe.
    method: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'TRACE'],
    url: '/v2/workflows/hooks/:userId/:runId/:eventId',
    // Before the body is read: anyone may call this route, and a body sent to a URL that is not a
    // live webhook must cost the server nothing but the check (the 404 is sent and the rest of
    // the body discarded as it arrives, never buffered). A Content-Length beyond the account's
    // max_message_size is refused here too.
    preParsing: async (request: HookRequest, _reply, payload) => {
      const { userId, runId } = request.params;
      const eventId = checkEventId(request.params.eventId);
      const account = await ctx.accounts.get(userId);
      if (!account) throw notFound(NOT_FOUND);
      const run = await ctx.executor.workflowRunGet({ accountId: account.id, runId });
      if (!run || run.state !== 'RUN_STARTED') throw notFound(NOT_FOUND);
      const steps = await ctx.executor.workflowStepList({ accountId: account.id, runId });
      if (!createdWebhook(steps, eventId)) throw notFound(NOT_FOUND);
      const declared = Number(request.headers['content-length'] ?? 0);
      const limit = ctx.accounts.limits(account).max_message_size;
      if (declared > limit) {
        throw tooLarge(`body of ${declared} bytes is larger than max_message_size (${limit})`);
      }
      found.set(request, account);
      return payload;
    },
    handler: async (request: HookRequest, reply) => {
      const { runId, eventId } = request.params;
      const account = found.get(request);
      if (!account) throw notFound(NOT_FOUND);
      const body = bodyOf(request, ctx.accounts.limits(account));
      const now = ctx.clock.now();
      const notified = await notifyRun(ctx.executor, {
        accountId: account.id,
        runId,
        eventId,
        eventData: hookEventData(request, body),
        now,
      });
      if (!notified) throw notFound(NOT_FOUND);
      ctx.usage.add(account.id, 'bandwidth', body.byteLength, now);
      meterNotified(ctx, account.id, notified.length, now);
      const [woken] = notified;
      // 200 with the resuming message when the run waited; 202 when it was kept for its wait.
      return woken ? reply.send({ messageId: woken.messageId }) : reply.code(202).send({});
    },
  });
}
