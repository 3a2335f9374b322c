/**
 * Workflow runs: the history the SDK fetches, completion and cancel, the logs, the workflow DLQ
 * and its resume, restart and failure-function retry. See docs/workflows.md.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { badRequest, notFound } from '../../core/errors.js';
import { quoteValue } from '../../core/headers.js';
import { lastAttemptOf } from '../../core/retry-timing.js';
import { parsePublishSettings } from '../../core/publish-request.js';
import { rawSteps, workflowRunCursor, type WorkflowRun } from '../../core/workflow.js';
import { resumeWorkflowRun, type WorkflowOverride } from '../../engine/workflow-resume.js';
import { failureCall } from '../../engine/workflow-outcomes.js';
import { deliverInvokeResult } from '../../engine/workflow-invoke.js';
import { pendingSteps } from '../../engine/workflow-pending.js';
import type { InvokeResult } from '../../core/workflow-invoke.js';
import { eventOf } from '../../engine/records.js';
import type { ApiContext } from '../context.js';
import { jsonBody } from '../json-body.js';
import type { DlqIdsBody } from '../schemas/messaging.js';
import { checkDestinationAllowed } from '../destination-guard.js';
import { workflowDlqJson, workflowRunJson } from '../workflow-presenters.js';
import { cursorField } from '../query.js';
import { parseWorkflowQuery, type WorkflowQuery } from '../workflow-query.js';
import { cancel as cancelMessages, searchParams } from './messages.js';
import { BODY_CUT_PARAM, boundedPage, itemBytes, parseBodyCut, sendPage } from '../list-page.js';

/** Page size of the logs and DLQ lists when `count` is absent, and of bulk actions' pages. */
const DEFAULT_COUNT = 100;
const MAX_LIST_COUNT = 1_000;

type Req = FastifyRequest<{ Params: Record<string, string> }>;

async function getRun(ctx: ApiContext, request: Req, runId: string): Promise<WorkflowRun> {
  const run = await ctx.executor.workflowRunGet({ accountId: request.account.id, runId });
  if (!run) throw notFound(`workflow run ${quoteValue(runId)} not found`);
  return run;
}

async function getDlqRun(ctx: ApiContext, request: Req, dlqId: string): Promise<WorkflowRun> {
  const page = await ctx.executor.workflowRunList({
    accountId: request.account.id,
    filter: { inDlq: true, dlqIds: [dlqId] },
    count: 1,
  });
  const [run] = page.items;
  if (!run) throw notFound(`workflow DLQ entry ${quoteValue(dlqId)} not found`);
  return run;
}

/**
 * Every run a bulk action applies to: one page of `count` when given (with the cursor to go on,
 * absent after the last page), else all matching runs. Cancels and DLQ deletes without any filter need `count` (the SDK's
 * `all: true` sends one), so a bare call never destroys everything by accident; a bare resume or
 * restart (`bareMeansAll`) resumes every run in the DLQ, as interface.md §6 has it.
 */
async function bulkRuns(
  ctx: ApiContext,
  accountId: string,
  q: WorkflowQuery,
  { inDlq, bareMeansAll = false }: { inDlq: boolean; bareMeansAll?: boolean },
): Promise<{ runs: WorkflowRun[]; cursor?: string }> {
  if (!q.filtered && q.count === undefined && !bareMeansAll) {
    throw badRequest('give a filter, dlqIds, or count (to act on all runs, a page at a time)');
  }
  const filter = { ...q.filter, inDlq: inDlq || undefined };
  if (q.count !== undefined) {
    const page = await ctx.executor.workflowRunList({
      accountId,
      filter,
      cursor: q.cursor,
      count: q.count,
    });
    return { runs: page.items, cursor: page.cursor };
  }
  const runs: WorkflowRun[] = [];
  let cursor = q.cursor;
  for (;;) {
    const page = await ctx.executor.workflowRunList({
      accountId,
      filter,
      cursor,
      count: DEFAULT_COUNT,
    });
    runs.push(...page.items);
    if (!page.cursor) return { runs };
    cursor = page.cursor;
  }
}

/** The resume/restart override headers of interface.md endpoint 6, validated as on publish. */
function overrideOf(ctx: ApiContext, request: FastifyRequest): WorkflowOverride {
  const prefix = ctx.prefix.toLowerCase();
  const sent = (name: string) => request.headers[`${prefix}-${name}`] !== undefined;
  const now = ctx.clock.now();
  const s = parsePublishSettings({
    prefix: ctx.prefix,
    headers: request.headers,
    query: new URLSearchParams(),
    plan: ctx.accounts.limits(request.account),
    now,
  });
  const o: WorkflowOverride = {};
  if (sent('retries')) o.retries = s.retries;
  if (sent('delay') || sent('not-before')) o.notBefore = s.notBefore;
  if (sent('retry-delay')) o.retryDelayExpression = s.retryDelayExpression;
  if (s.flowControl) o.flowControl = s.flowControl;
  if (s.labels) o.labels = s.labels;
  if (s.failureCallback) {
    const field = `${ctx.prefix}-Failure-Callback`;
    checkDestinationAllowed(s.failureCallback.url, ctx.production, field);
    o.failureCallbackUrl = s.failureCallback.url;
  }
  return o;
}

async function resumeMany(
  ctx: ApiContext,
  request: FastifyRequest,
  runs: WorkflowRun[],
  kind: 'resume' | 'restart',
): Promise<{ workflowRunId: string; workflowCreatedAt: number }[]> {
  const override = overrideOf(ctx, request);
  const out: { workflowRunId: string; workflowCreatedAt: number }[] = [];
  for (const run of runs) {
    const now = ctx.clock.now();
    const resumed = await resumeWorkflowRun({ executor: ctx.executor, run, kind, override, now });
    if (!resumed) continue;
    ctx.usage.add(run.accountId, 'messages', 1, now);
    ctx.usage.add(run.accountId, 'workflow_message', 1, now);
    ctx.usage.add(run.accountId, 'workflow_run', 1, now);
    out.push({ workflowRunId: resumed.run.runId, workflowCreatedAt: resumed.run.createdAt });
  }
  if (out.length > 0) ctx.onMessagesStored();
  return out;
}

export function workflowRoutes(app: FastifyInstance, ctx: ApiContext): void {
  // The history, for the SDK's lazy fetch: 404 once the run is no longer running.
  app.get<{ Params: { runId: string } }>('/v2/workflows/runs/:runId', async (request) => {
    const run = await getRun(ctx, request, request.params.runId);
    if (run.state !== 'RUN_STARTED') {
      throw notFound(`workflow run ${quoteValue(run.runId)} has ended (${run.state})`);
    }
    const steps = await ctx.executor.workflowStepList({
      accountId: run.accountId,
      runId: run.runId,
    });
    return rawSteps(steps);
  });

  // Completion (`cancel=false`, body = the result) or cancel (`cancel=true`, or no `cancel`: the
  // REST API's "Cancel Workflow Run"; the SDK always says which it means). Ending a run that has
  // ended already succeeds and changes nothing: the SDK ends a run again when it was started
  // twice with one id, and expects success (as QStash answers).
  app.delete<{ Params: { runId: string }; Querystring: { cancel?: string } }>(
    '/v2/workflows/runs/:runId',
    async (request) => {
      const cancel = request.query.cancel ?? 'true';
      if (cancel !== 'true' && cancel !== 'false') {
        throw badRequest(`invalid cancel ${quoteValue(cancel)}: expected true or false`);
      }
      const run = await getRun(ctx, request, request.params.runId);
      if (run.state === 'RUN_STARTED') {
        const response =
          request.body instanceof Uint8Array
            ? Buffer.from(request.body).toString('utf8')
            : undefined;
        const state = cancel === 'true' ? 'RUN_CANCELED' : 'RUN_SUCCESS';
        // False when another request ended it meanwhile: its end stands, as for an ended run.
        await endRun(ctx, run, state, ctx.clock.now(), { response });
      }
      return {};
    },
  );

  // Bulk cancel: `workflowRunIds`, or filters (`workflowUrl` is a prefix unless
  // `workflowUrlExactMatch=true`; `host`, `path` of the workflow URL), with `count`.
  app.delete('/v2/workflows/runs', async (request) => {
    const q = parseWorkflowQuery(searchParams(request.url), {
      maxCount: MAX_LIST_COUNT,
      accepted: ['workflowUrlExactMatch', 'host', 'path'],
    });
    q.filter.states = ['RUN_STARTED'];
    q.filtered = q.filtered || q.count !== undefined;
    const { runs } = await bulkRuns(ctx, request.account.id, q, { inDlq: false });
    let cancelled = 0;
    const now = ctx.clock.now();
    for (const run of runs) if (await endRun(ctx, run, 'RUN_CANCELED', now, {})) cancelled++;
    return { cancelled };
  });

  const logs = async (request: FastifyRequest, reply: FastifyReply) => {
    const query = searchParams(request.url);
    const q = parseWorkflowQuery(query, {
      maxCount: MAX_LIST_COUNT,
      accepted: ['state', 'host', 'path', 'messageId', BODY_CUT_PARAM],
      ignored: ['groupBy'],
    });
    const bodyCut = parseBodyCut(query);
    const page = await boundedPage({
      count: q.count ?? DEFAULT_COUNT,
      cursor: q.cursor,
      fetch: (after, n) =>
        ctx.executor.workflowRunList({
          accountId: request.account.id,
          filter: q.filter,
          cursor: after,
          count: n,
        }),
      cursorOf: (run) => workflowRunCursor(run, false),
      present: async (run) => {
        const { executor, prefix } = ctx;
        const steps = await executor.workflowStepList({
          accountId: run.accountId,
          runId: run.runId,
          bodyCut,
        });
        const pending = await pendingSteps(executor, run, steps, bodyCut, ctx.clock.now());
        return workflowRunJson(run, steps, { prefix, pending });
      },
      // A run shows its history: several steps, each cut.
      itemBytes: 8 * itemBytes(bodyCut),
    });
    return sendPage(reply, 'runs', page);
  };
  app.get('/v2/workflows/logs', logs);
  app.get('/v2/workflows/events', logs);

  app.get('/v2/workflows/dlq', (request, reply) => listWorkflowDlq(ctx, request, reply));
  app.get<{ Params: { dlqId: string } }>('/v2/workflows/dlq/:dlqId', async (request) =>
    workflowDlqJson(await getDlqRun(ctx, request, request.params.dlqId)),
  );

  const removeFromDlq = async (run: WorkflowRun) => {
    const left: WorkflowRun = { ...run, updatedAt: ctx.clock.now() };
    delete left.dlq;
    return ctx.executor.workflowRunUpdate({ run: left });
  };
  app.delete<{ Params: { dlqId: string } }>('/v2/workflows/dlq/:dlqId', async (request) => {
    await removeFromDlq(await getDlqRun(ctx, request, request.params.dlqId));
    return { deleted: 1 };
  });
  app.delete('/v2/workflows/dlq', async (request) => {
    const q = parseWorkflowQuery(searchParams(request.url), {
      maxCount: MAX_LIST_COUNT,
      accepted: ['failureFunctionState'],
    });
    const { runs, cursor } = await bulkRuns(ctx, request.account.id, q, { inDlq: true });
    let deleted = 0;
    for (const run of runs) if (await removeFromDlq(run)) deleted++;
    return { deleted, ...cursorField(cursor) };
  });

  for (const kind of ['resume', 'restart'] as const) {
    app.post(`/v2/workflows/dlq/${kind}`, async (request) => {
      const q = parseWorkflowQuery(searchParams(request.url), {
        maxCount: MAX_LIST_COUNT,
        accepted: ['failureFunctionState'],
      });
      const { runs, cursor } = await bulkRuns(ctx, request.account.id, q, {
        inDlq: true,
        bareMeansAll: true,
      });
      // `""` once every match was processed: interface.md endpoint 6, the one list answer that
      // keeps an empty cursor.
      const workflowRuns = await resumeMany(ctx, request, runs, kind);
      return { workflowRuns, cursor: cursor ?? '' };
    });
    // Upstash's "Multiple IDs" form: `{"dlqIds": [...]}` in the body. Every id must be in the
    // DLQ (404 naming the first that is not) before any run is resumed. A run holds its failed
    // message whole, so each is read again when its turn comes rather than all kept at once.
    app.post<{ Params: Record<string, string> }>(
      `/v2/workflows/dlq/${kind}/multi`,
      async (request) => {
        // Shape and size were checked by the route's schema (schemas/messaging.ts) before this.
        const dlqIds = [...new Set((jsonBody(request) as DlqIdsBody).dlqIds)];
        for (const dlqId of dlqIds) await getDlqRun(ctx, request, dlqId);
        const workflowRuns = [];
        for (const dlqId of dlqIds) {
          const run = await getDlqRun(ctx, request, dlqId);
          workflowRuns.push(...(await resumeMany(ctx, request, [run], kind)));
        }
        return { workflowRuns };
      },
    );
    app.post<{ Params: { dlqId: string } }>(`/v2/workflows/dlq/${kind}/:dlqId`, async (request) => {
      const run = await getDlqRun(ctx, request, request.params.dlqId);
      const [resumed] = await resumeMany(ctx, request, [run], kind);
      if (!resumed)
        throw notFound(`workflow DLQ entry ${quoteValue(request.params.dlqId)} not found`);
      return resumed;
    });
  }

  // Runs the failure function again (after it failed, or to run one that was never called).
  app.post<{ Params: { dlqId: string } }>(
    '/v2/workflows/dlq/callback/:dlqId',
    async (request, reply) => {
      const run = await getDlqRun(ctx, request, request.params.dlqId);
      return retryFailureFunction(ctx, run, reply);
    },
  );
}

/** `GET /v2/workflows/dlq`, also `GET /v2/dlq?source=workflow` (the SDK's form). */
export async function listWorkflowDlq(
  ctx: ApiContext,
  request: FastifyRequest,
  reply: FastifyReply,
) {
  const query = searchParams(request.url);
  const q = parseWorkflowQuery(query, {
    maxCount: 100,
    accepted: ['failureFunctionState', 'url', 'responseStatus', BODY_CUT_PARAM],
    ignored: ['source', 'order'],
  });
  const bodyCut = parseBodyCut(query);
  const page = await boundedPage({
    count: q.count ?? DEFAULT_COUNT,
    cursor: q.cursor,
    fetch: (after, n) =>
      ctx.executor.workflowRunList({
        accountId: request.account.id,
        filter: { ...q.filter, inDlq: true },
        cursor: after,
        count: n,
      }),
    cursorOf: (run) => workflowRunCursor(run, true),
    present: (run) => workflowDlqJson(run, bodyCut),
    // The failed message is stored whole in the run (no cut in SQL): read a few at a time.
    itemBytes: 1024 * 1024,
  });
  return sendPage(reply, 'messages', page);
}

/**
 * Ends a running run: success (with its result) or cancel. Its pending messages are not
 * delivered any more: the engine drops a message of a run that is not running. A cancel also
 * cancels them at once (as `DELETE /v2/messages` would: logged CANCELLED, gone from the message
 * list), so a sleep of a day does not wait there for a day; one in flight may still reach its
 * endpoint, whose SDK is then told the run has ended. A crash between the two leaves them to the
 * engine's drop.
 */
async function endRun(
  ctx: ApiContext,
  run: WorkflowRun,
  state: 'RUN_SUCCESS' | 'RUN_CANCELED',
  now: number,
  p: { response?: string },
): Promise<boolean> {
  const ended: WorkflowRun = { ...run, state, updatedAt: now, completedAt: now };
  if (p.response !== undefined) ended.response = p.response;
  delete ended.keptEvents;
  let ok: boolean;
  if (run.invoker) {
    // An invoked run: its invoker resumes with the result in the same transaction.
    const result: InvokeResult =
      state === 'RUN_SUCCESS' ? { kind: 'success', body: p.response } : { kind: 'canceled' };
    const resumed = await ctx.executor.transaction(async (tx) => {
      if (!(await tx.workflowRunUpdate({ run: ended, ifState: 'RUN_STARTED' }))) return false;
      const message = await deliverInvokeResult(tx, ended, result, now);
      if (message) {
        await tx.messageInsertMany({ messages: [message] });
        await tx.eventInsertMany({ events: [eventOf(message, 'CREATED', now)] });
      }
      return message ?? true;
    });
    ok = resumed !== false;
    if (typeof resumed === 'object') {
      ctx.onMessagesStored();
      ctx.usage.add(run.accountId, 'messages', 1, now);
      ctx.usage.add(run.accountId, 'workflow_message', 1, now);
    }
  } else {
    ok = await ctx.executor.workflowRunUpdate({ run: ended, ifState: 'RUN_STARTED' });
  }
  if (ok && state === 'RUN_CANCELED') {
    ctx.usage.add(run.accountId, 'workflow_canceled', 1, now);
    await cancelMessages(ctx, run.accountId, { workflowRunIds: [run.runId] });
  }
  if (ok && state === 'RUN_SUCCESS') ctx.usage.add(run.accountId, 'workflow_delivered', 1, now);
  return ok;
}

async function retryFailureFunction(ctx: ApiContext, run: WorkflowRun, reply: FastifyReply) {
  const dlq = run.dlq;
  if (!dlq || !run.settings.failureCallback)
    throw badRequest(`workflow run ${quoteValue(run.runId)} has no failure function`);
  if (run.failureFunctionState === 'CALLBACK_INPROGRESS') {
    throw badRequest(
      `the failure function of workflow run ${quoteValue(run.runId)} is in progress`,
    );
  }
  const now = ctx.clock.now();
  const source = dlq.message;
  const attempt = lastAttemptOf(dlq);
  await ctx.executor.transaction(async (tx) => {
    const call = await failureCall(tx, run, { source, attempt, dlqId: dlq.dlqId, now });
    const updated: WorkflowRun = {
      ...run,
      updatedAt: now,
      failureFunctionState: 'CALLBACK_INPROGRESS',
      dlq: { ...dlq, failureMessageId: call.id },
    };
    await tx.workflowRunUpdate({ run: updated });
    await tx.messageInsertMany({ messages: [call] });
    await tx.eventInsertMany({ events: [eventOf(call, 'CREATED', now)] });
  });
  ctx.onMessagesStored();
  ctx.usage.add(run.accountId, 'messages', 1, now);
  return reply.send({ workflowRunId: run.runId, workflowCreatedAt: run.createdAt });
}
