/**
 * Events between workflow runs: `POST /v2/wait/{eventId}` (the SDK's `context.waitForEvent`),
 * `POST /v2/notify/{eventId}` and `GET /v2/waiters/{eventId}`. See docs/workflows.md.
 */
import type { FastifyInstance } from 'fastify';
import { badRequest, notFound } from '../../core/errors.js';
import { quoteValue } from '../../core/headers.js';
import { redactHeaders } from '../../core/redaction.js';
import {
  checkEventId,
  parseWaitRequest,
  waitResultBody,
  waiterJson,
  type WorkflowWaiter,
} from '../../core/workflow-events.js';
import { notifyRun, notifyWaiters, startWait } from '../../engine/workflow-events.js';
import type { ApiContext } from '../context.js';
import { checkDestinationAllowed } from '../destination-guard.js';
import { admitRequest } from '../limits.js';
import { bodyOf, preparePublish } from './publish.js';

type EventRequest = { Params: { eventId: string } };

export function workflowEventRoutes(app: FastifyInstance, ctx: ApiContext): void {
  // A run waits: its headers are those of a step of the run (`<P>-Workflow-RunId`…); the body
  // says where to resume and when to give up.
  app.post<EventRequest>('/v2/wait/:eventId', async (request, reply) => {
    const eventId = checkEventId(request.params.eventId);
    const account = request.account;
    const limits = ctx.accounts.limits(account);
    const wait = parseWaitRequest(bodyOf(request, limits), limits.max_delay * 1000);
    if (wait.timeoutUrl !== undefined) {
      checkDestinationAllowed(wait.timeoutUrl, ctx.production, 'timeoutUrl');
    }
    const prepared = await preparePublish(ctx, {
      account,
      destination: { kind: 'url', url: wait.url },
      headers: request.headers,
      query: new URLSearchParams(),
      body: new Uint8Array(0),
      callerIp: request.ip,
    });
    const [item] = prepared.items;
    const wf = item?.message.spec.workflow;
    if (!item || !wf || item.workflow?.kind !== 'append') {
      throw badRequest(
        `${ctx.prefix}-Workflow-RunId: a wait needs the run id of a running workflow run (and no ${ctx.prefix}-Workflow-Init: true)`,
      );
    }
    // The timeout message: a step of the run, due at the deadline, in the history only if it
    // comes before a notify.
    const timeout = item.message;
    const now = timeout.createdAt;
    timeout.notBefore = now + wait.timeoutMs;
    timeout.dueAt = timeout.notBefore;
    timeout.body = waitResultBody(wait.step, { timeout: true });
    wf.waitFor = eventId;
    const redact = timeout.spec.redact;
    const waiter: WorkflowWaiter = {
      accountId: account.id,
      eventId,
      id: timeout.id,
      runId: wf.runId,
      url: timeout.url,
      deadline: timeout.notBefore,
      createdAt: now,
      step: wait.step,
      // Shown by GET /v2/waiters and the notify answer, never sent: stored already redacted as
      // the run asks, like the events log.
      headers: redactHeaders(timeout.spec.headers, redact),
    };
    if (wait.timeoutUrl !== undefined) waiter.timeoutUrl = wait.timeoutUrl;
    if (wait.timeoutHeaders !== undefined) {
      waiter.timeoutHeaders = redactHeaders(wait.timeoutHeaders, redact);
    }
    await admitRequest(ctx, request, reply, 1);
    const started = await startWait(ctx.executor, { waiter, timeout });
    ctx.onMessagesStored();
    ctx.usage.add(account.id, 'messages', 1, now);
    ctx.usage.add(account.id, 'workflow_message', 1, now);
    return reply.send({ messageId: started.messageId });
  });

  // Wakes the account's waiters of the event with the body as the event data.
  app.post<EventRequest>('/v2/notify/:eventId', async (request, reply) => {
    const eventId = checkEventId(request.params.eventId);
    const account = request.account;
    const eventData = bodyOf(request, ctx.accounts.limits(account));
    const now = ctx.clock.now();
    const notified = await notifyWaiters(ctx.executor, {
      accountId: account.id,
      eventId,
      eventData,
      now,
    });
    meterNotified(ctx, account.id, notified.length, now);
    return reply
      .code(201)
      .send(
        notified.map((n) => ({ waiter: waiterJson(n.waiter), messageId: n.messageId, error: '' })),
      );
  });

  runNotifyRoute(app, ctx);

  app.get<EventRequest>('/v2/waiters/:eventId', async (request) => {
    const eventId = checkEventId(request.params.eventId);
    const waiters = await ctx.executor.workflowWaiterList({
      accountId: request.account.id,
      eventId,
    });
    return waiters.map(waiterJson);
  });
}

/**
 * `POST /v2/notify/{runId}/{eventId}`: the run-scoped notify (the SDK's "lookback"). Wakes the
 * run when it waits for the event; else keeps the event until its `waitForEvent` comes (`201 []`).
 * 404 when the account has no such running run.
 */
function runNotifyRoute(app: FastifyInstance, ctx: ApiContext): void {
  app.post<{ Params: { runId: string; eventId: string } }>(
    '/v2/notify/:runId/:eventId',
    async (request, reply) => {
      const eventId = checkEventId(request.params.eventId);
      const account = request.account;
      const eventData = bodyOf(request, ctx.accounts.limits(account));
      const now = ctx.clock.now();
      const notified = await notifyRun(ctx.executor, {
        accountId: account.id,
        runId: request.params.runId,
        eventId,
        eventData,
        now,
      });
      if (!notified) {
        throw notFound(`workflow run ${quoteValue(request.params.runId)} is not running`);
      }
      meterNotified(ctx, account.id, notified.length, now);
      return reply.code(201).send(
        notified.map((n) => ({
          waiter: waiterJson(n.waiter),
          messageId: n.messageId,
          error: '',
        })),
      );
    },
  );
}

/** Meters the messages a notify stored and wakes the engine. */
export function meterNotified(ctx: ApiContext, accountId: string, n: number, now: number): void {
  if (n === 0) return;
  ctx.onMessagesStored();
  ctx.usage.add(accountId, 'messages', n, now);
  ctx.usage.add(accountId, 'workflow_message', n, now);
}
