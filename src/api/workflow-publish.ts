/**
 * What a publish of a workflow message (one with `<P>-Workflow-RunId`) adds to an ordinary
 * publish: the trigger (`<P>-Workflow-Init: true`) starts a run that keeps the trigger's
 * settings; every later step inherits them, since the SDK sends retries, the failure URL and the
 * user's headers only with the trigger (see docs/workflows.md).
 */
import { checkHttpUrl } from '../core/destination.js';
import { badRequest } from '../core/errors.js';
import { HOP_BY_HOP_HEADERS, headerValueProblem, quoteValue } from '../core/headers.js';
import type { PlanLimits } from '../core/plans.js';
import type { IncomingHeaders, PublishSettings } from '../core/publish-request.js';
import type { Account, HeaderMap } from '../core/types.js';
import { MAX_INVOKE_DEPTH, parseInvokeRequest } from '../core/workflow-invoke.js';
import { parseWorkflowHeaders, type MessageWorkflow, type WorkflowRun } from '../core/workflow.js';
import type { PublishItem } from '../engine/publisher.js';
import type { Executor } from '../storage/driver.js';
import { checkDestinationAllowed } from './destination-guard.js';

/**
 * The workflow SDK forwards every header of the request that reached the endpoint
 * (`<P>-Forward-Connection`, `-Host`…). For workflow messages, forwards of headers the delivery
 * sets itself are dropped instead of refused: the endpoint's own request headers are not a
 * publisher's mistake. Other publishes still get a 400 for them.
 */
export function dropHopByHopForwards(prefix: string, headers: IncomingHeaders): IncomingHeaders {
  const p = prefix.toLowerCase();
  if (headers[`${p}-workflow-runid`] === undefined) return headers;
  const forward = `${p}-forward-`;
  return Object.fromEntries(
    Object.entries(headers).filter(
      ([name]) =>
        !name.toLowerCase().startsWith(forward) ||
        !HOP_BY_HOP_HEADERS.has(name.toLowerCase().slice(forward.length)),
    ),
  );
}

/** The protocol's default retries of a step when the trigger sends none. */
export const WORKFLOW_DEFAULT_RETRIES = 3;

export interface WorkflowPublish {
  message: MessageWorkflow;
  write: NonNullable<PublishItem['workflow']>;
  /** The message's body instead of the request's (an invoked run's payload). */
  body?: Uint8Array;
}

/** The invoke depth the SDK forwards (`<P>-Workflow-Invoke-Count`), 0 when absent. */
function invokeDepth(prefix: string, headers: HeaderMap): number {
  const name = `${prefix}-workflow-invoke-count`.toLowerCase();
  const entry = Object.entries(headers).find(([key]) => key.toLowerCase() === name);
  const depth = Number(entry?.[1][0] ?? '0');
  return Number.isFinite(depth) ? depth : 0;
}

/**
 * Reads the workflow headers of a publish to `url` and adjusts `settings` (in place) to the run's.
 * Undefined for an ordinary publish.
 *
 * @throws FerryError 400 for malformed workflow headers, a group destination, or a step of a run
 *   that does not exist or is no longer running (the SDK reads a 400 as "the run has ended").
 */
export async function prepareWorkflowPublish(p: {
  executor: Executor;
  prefix: string;
  account: Account;
  plan: PlanLimits;
  headers: IncomingHeaders;
  settings: PublishSettings;
  url: string | undefined;
  callerIp: string;
  /** Production mode: `<P>-Workflow-Url` must be a public address, like any destination. */
  production: boolean;
  now: number;
  /** The request's body (an invoke request when the trigger has `<P>-Workflow-Invoke`). */
  body: Uint8Array;
}): Promise<WorkflowPublish | undefined> {
  const wf = parseWorkflowHeaders(p.prefix, p.headers);
  if (!wf) return undefined;
  const { settings, now } = p;
  if (p.url === undefined) {
    throw badRequest(`${p.prefix}-Workflow-RunId: a workflow message needs a URL destination`);
  }
  if (wf.url !== undefined) {
    checkHttpUrl(wf.url, `${p.prefix}-Workflow-Url`);
    checkDestinationAllowed(wf.url, p.production, `${p.prefix}-Workflow-Url`);
  }
  if (wf.init) {
    if (!wf.retriesSent) settings.retries = Math.min(WORKFLOW_DEFAULT_RETRIES, p.plan.max_retries);
    const url = wf.url ?? p.url;
    const run: WorkflowRun = {
      accountId: p.account.id,
      runId: wf.runId,
      url,
      state: 'RUN_STARTED',
      createdAt: now,
      updatedAt: now,
      callerIp: p.callerIp,
      settings: { headers: settings.headers, retries: settings.retries },
    };
    if (settings.labels) {
      // Every delivery of the run carries them in `<P>-Label`, which undici refuses to send
      // beyond Latin-1 (a label may arrive so as a query parameter or in a batch's JSON).
      const problem = headerValueProblem(settings.labels.join(','));
      if (problem !== undefined) {
        throw badRequest(
          `invalid ${p.prefix}-Label ${quoteValue(settings.labels.join(','))}: a workflow run's labels go with each of its deliveries in a header, and ${problem}`,
        );
      }
      run.labels = settings.labels;
    }
    const s = run.settings;
    if (settings.retryDelayExpression !== undefined) {
      s.retryDelayExpression = settings.retryDelayExpression;
    }
    if (settings.timeoutMs !== undefined) s.timeoutMs = settings.timeoutMs;
    if (settings.flowControl) s.flowControl = settings.flowControl;
    if (settings.failureCallback) s.failureCallback = settings.failureCallback;
    if (settings.redact) s.redact = settings.redact;
    const out: WorkflowPublish = {
      message: { runId: wf.runId, url, createdAt: now, callType: 'step' },
      write: { kind: 'start', run },
    };
    if (wf.invoke) {
      // `context.invoke`: the body is the invoke request; the invoked run's payload is its body.
      const field = `${p.prefix}-Workflow-Invoke`;
      const request = parseInvokeRequest(p.body, field);
      if (invokeDepth(p.prefix, settings.headers) > MAX_INVOKE_DEPTH) {
        throw badRequest(`${field}: more than ${MAX_INVOKE_DEPTH} runs invoking runs in a chain`);
      }
      const invoker = await p.executor.workflowRunGet({
        accountId: p.account.id,
        runId: request.workflowRunId,
      });
      if (!invoker || invoker.state !== 'RUN_STARTED') {
        throw badRequest(
          `${field}: the invoking workflow run ${quoteValue(request.workflowRunId)} ${invoker ? `has ended (${invoker.state})` : 'does not exist'}`,
        );
      }
      run.invoker = {
        runId: invoker.runId,
        url: invoker.url,
        createdAt: invoker.createdAt,
        step: request.step,
      };
      out.body = Buffer.from(request.body ?? '');
    }
    return out;
  }

  const run = await p.executor.workflowRunGet({ accountId: p.account.id, runId: wf.runId });
  if (!run || run.state !== 'RUN_STARTED') {
    throw badRequest(
      `workflow run ${quoteValue(wf.runId)} ${run ? `has ended (${run.state})` : 'does not exist'}: cannot append a step`,
    );
  }
  const message: MessageWorkflow = {
    runId: run.runId,
    url: run.url,
    createdAt: run.createdAt,
    callType: wf.callType,
  };
  settings.labels ??= run.labels;
  // Every message of the run, a `context.call` included, keeps the trigger's redaction.
  settings.redact ??= run.settings.redact;
  if (wf.callType === 'toCallback') {
    // A `context.call`: the third party gets only the call's own settings; the response comes
    // back to the workflow as a callback, retried like any step of the run.
    if (settings.callback && settings.callback.retries === undefined) {
      settings.callback.retries = run.settings.retries;
    }
    return { message, write: { kind: 'none' } };
  }
  const s = run.settings;
  settings.headers = { ...s.headers, ...settings.headers };
  if (!wf.retriesSent) settings.retries = s.retries;
  settings.retryDelayExpression ??= s.retryDelayExpression;
  settings.timeoutMs ??= s.timeoutMs;
  settings.flowControl ??= s.flowControl;
  settings.failureCallback ??= s.failureCallback;
  return { message, write: wf.callType === 'step' ? { kind: 'append' } : { kind: 'none' } };
}
