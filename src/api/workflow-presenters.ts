/** The JSON shapes of workflow runs: a run in the logs, a run in the workflow DLQ. */
import { redactedText, type Redaction } from '../core/redaction.js';
import { headerGet } from '../core/headers.js';
import type { EventRecord, HeaderMap } from '../core/types.js';
import type { WorkflowRun, WorkflowStep } from '../core/workflow.js';
import { parseStepBody, workflowDeliveryHeaders } from '../core/workflow.js';
import { describeAttempt, lastAttemptOf } from '../core/retry-timing.js';
import type { PendingStep } from '../engine/workflow-pending.js';
import { cutFields, messageJson, textOrBase64, trimCutUtf8 } from './presenters.js';
import { inFlightFields } from './workflow-in-flight.js';
import { redactStep, redactStepHeaders } from './workflow-step-redaction.js';

/** What the logs show a run with besides its record and history. */
export interface RunLogContext {
  /** The header prefix (`Svc`): the protocol headers each step shows are named with it. */
  prefix: string;
  /** A running run's messages not final yet (engine/workflow-pending.ts). */
  pending?: readonly PendingStep[];
}

/**
 * `retries`, `retryDelay` and `headers` of a step: what its message was delivered with. The
 * headers are the forwarded ones kept with the entry and the run's protocol headers, as the
 * delivery sends them (the latter replace a forwarded header of the same name), redacted as the
 * run asks; the per-attempt headers (`<P>-Message-Id`, `-Retried`, `-Signature`…) are left out.
 * An entry stored before these were kept (no `retries`) shows the run's settings: every step
 * inherits them from the trigger, unless the SDK sent a step its own.
 */
function deliveryFields(
  step: WorkflowStep,
  run: WorkflowRun,
  prefix: string,
): Record<string, unknown> {
  const kept = step.retries !== undefined;
  const protocol = Object.entries(workflowDeliveryHeaders(prefix, run, step.callType));
  // fromEntries, not assignment: a header name is the sender's choice (`__proto__` included).
  const headers: HeaderMap = Object.fromEntries([
    ...Object.entries(
      step.headersJson === undefined
        ? run.settings.headers
        : (JSON.parse(step.headersJson) as HeaderMap),
    ),
    ...protocol.map(([name, value]): [string, string[]] => [name, [value]]),
  ]);
  const redaction = run.settings.redact;
  return {
    retries: step.retries ?? run.settings.retries,
    retryDelay: kept ? step.retryDelay : run.settings.retryDelayExpression,
    headers: redaction?.headers ? redactStepHeaders(headers, redaction) : headers,
  };
}

/**
 * One step of a run's history as the logs show it (the SDK's step object, decoded, with what its
 * message was delivered with: `deliveryFields`), its content redacted as the run's
 * `<P>-Redact-Fields` asks: the trigger's payload and each step's output and call body with
 * `body`, the header maps (the step's own and those of `context.call`) with `header`.
 */
function stepJson(step: WorkflowStep, run: WorkflowRun, prefix: string): Record<string, unknown> {
  return { ...stepContentJson(step, run.settings.redact), ...deliveryFields(step, run, prefix) };
}

/** A step's own fields: its id, type and time, and its content (see `stepJson`). */
function stepContentJson(
  step: WorkflowStep,
  redaction: Redaction | undefined,
): Record<string, unknown> {
  const head = {
    messageId: step.messageId,
    callType: step.callType,
    createdAt: step.createdAt,
    state: 'STEP_SUCCESS',
  };
  const hideBody = redaction?.body === true;
  const initial =
    step.seq === 0 ? { stepId: 0, stepName: 'init', stepType: 'Initial', concurrent: 1 } : {};
  if (step.bodySize !== undefined) {
    // Cut by the list: not a whole step object any more, shown as the text it begins with. A
    // redacted cut value shows no hash: the hash of a cut would not match the whole.
    const key = step.seq === 0 ? 'out' : 'body';
    return {
      ...head,
      ...initial,
      ...(hideBody
        ? { [key]: 'REDACTED' }
        : textOrBase64(trimCutUtf8(step.body), key, `${key}Base64`)),
      ...cutFields(key, step.bodySize),
    };
  }
  if (step.seq === 0) {
    return {
      ...head,
      ...initial,
      ...(hideBody
        ? { out: redactedText(step.body) }
        : textOrBase64(step.body, 'out', 'outBase64')),
    };
  }
  const parsed = parseStepBody(step.body);
  if (parsed) {
    const shown = waitOutDecoded(parsed);
    // The body is what the workflow endpoint sent: Ferry's own fields come last, so a body
    // naming `messageId` or `state` cannot stand in for them.
    return { ...(redaction ? redactStep(shown, redaction) : shown), ...head };
  }
  return {
    ...head,
    ...(hideBody
      ? { body: redactedText(step.body) }
      : textOrBase64(step.body, 'body', 'bodyBase64')),
  };
}

/**
 * A wait step's `out` is the event data in base64 (`waitResultBody`: the SDK decodes it when the
 * run resumes); the logs show it as text, as every other step's `out`. Not UTF-8: left as it is.
 */
function waitOutDecoded(step: Record<string, unknown>): Record<string, unknown> {
  if (step.stepType !== 'Wait' || typeof step.out !== 'string') return step;
  try {
    return { ...step, out: utf8.decode(Buffer.from(step.out, 'base64')) };
  } catch {
    return step;
  }
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Groups the history as the SDK's `StepLogGroup`s: plan entries of a parallel group (stepId 0)
 * are left out, results with the same `concurrent` > 1 that follow each other form a parallel
 * group, every other step is its own sequential group.
 */
function stepGroups(
  steps: WorkflowStep[],
  run: WorkflowRun,
  prefix: string,
): Record<string, unknown>[] {
  const groups: { type: 'sequential' | 'parallel'; steps: Record<string, unknown>[] }[] = [];
  for (const step of steps) {
    const json = stepJson(step, run, prefix);
    if (step.seq > 0 && json.stepId === 0) continue; // a plan entry of a parallel group
    const concurrent = typeof json.concurrent === 'number' ? json.concurrent : 1;
    const last = groups[groups.length - 1];
    if (concurrent > 1 && last?.type === 'parallel' && last.steps.length < concurrent) {
      last.steps.push(json);
    } else groups.push({ type: concurrent > 1 ? 'parallel' : 'sequential', steps: [json] });
  }
  return groups;
}

/**
 * The last group of a failed run that is in the workflow DLQ: the step that failed, as the SDK's
 * `{type: "next"}` group with state `STEP_FAILED` and the last attempt as its `errors` (its
 * `StepError`: the error text the events log shows, the response's body, headers and status).
 * The failed step never wrote a result, so the history has no entry of it.
 */
function failedStepGroup(run: WorkflowRun, prefix: string): Record<string, unknown>[] {
  const dlq = run.dlq;
  if (run.state !== 'RUN_FAILED' || !dlq) return [];
  const error = stepErrorJson({
    error: describeAttempt(lastAttemptOf(dlq)),
    responseBody: dlq.responseBody,
    responseHeader: dlq.responseHeader,
    responseStatus: dlq.responseStatus,
    time: dlq.createdAt,
  });
  const step = {
    messageId: dlq.message.id,
    stepName: errorStepName(dlq.responseHeader, prefix),
    state: 'STEP_FAILED',
    retries: dlq.message.maxRetries,
    retryDelay: dlq.message.spec.retryDelayExpression,
    errors: [error],
  };
  return [{ type: 'next', steps: [step] }];
}

/**
 * The last group of a running run: its messages not final yet (`pending`), as the SDK's
 * `{type: "next"}` group: `STEP_PROGRESS` before a first attempt failed, then `STEP_RETRY` with
 * the failed attempts as `errors` and the retry's `nextDeliveryTime`. A message the history does
 * not name also tells which step it is (`inFlightFields`).
 */
function pendingStepGroup(
  run: WorkflowRun,
  pending: readonly PendingStep[] | undefined,
  prefix: string,
): Record<string, unknown>[] {
  if (run.state !== 'RUN_STARTED' || !pending || pending.length === 0) return [];
  const steps = pending.map((p) => {
    const { message, errors, nextDeliveryTime } = p;
    const own = inFlightFields(p, run.settings.redact, prefix);
    return {
      ...own,
      messageId: message.id,
      stepName: errorStepName(errors[errors.length - 1]?.responseHeader, prefix) ?? own.stepName,
      state: message.retried > 0 ? 'STEP_RETRY' : 'STEP_PROGRESS',
      retries: message.maxRetries,
      retryDelay: message.spec.retryDelayExpression,
      errors: errors.length > 0 ? errors.map(eventStepError) : undefined,
      nextDeliveryTime,
    };
  });
  return [{ type: 'next', steps }];
}

/**
 * The name of the step a failed attempt was running, as the workflow SDK reports it in its
 * error response (`<P>-Error-Step-Name`); undefined when the response had none.
 */
const errorStepName = (headers: HeaderMap | undefined, prefix: string): string | undefined =>
  headers && headerGet(headers, `${prefix}-Error-Step-Name`);

/** A failed attempt's ERROR event as the SDK's `StepError`. */
const eventStepError = (event: EventRecord): Record<string, unknown> =>
  stepErrorJson({ ...event, error: event.error ?? '' });

/**
 * The SDK's `StepError`: an attempt's error text (as the events log has it: `HTTP 500: …`) and
 * its response's body (text, else `bodyBase64`; cut by a list: `bodyTruncated`, `bodySize`),
 * headers and status.
 */
function stepErrorJson(
  attempt: Pick<
    EventRecord,
    'responseBody' | 'responseBodySize' | 'responseHeader' | 'responseStatus' | 'time'
  > & { error: string },
): Record<string, unknown> {
  const body = attempt.responseBody ?? new Uint8Array(0);
  const cut = attempt.responseBodySize;
  return {
    error: attempt.error,
    ...textOrBase64(cut === undefined ? body : trimCutUtf8(body), 'body', 'bodyBase64'),
    ...cutFields('body', cut),
    headers: attempt.responseHeader ?? {},
    status: attempt.responseStatus,
    time: attempt.time,
  };
}

/**
 * A run in the logs. With the run's `<P>-Redact-Fields` its steps are redacted (`stepJson`) and,
 * with `body`, its result (`workflowRunResponse`). The SDK's own history fetch
 * (`GET /v2/workflows/runs/{id}`) is not: the run needs the real step results to go on.
 */
export function workflowRunJson(
  run: WorkflowRun,
  steps: WorkflowStep[],
  context: RunLogContext,
): Record<string, unknown> {
  const redaction = run.settings.redact;
  return {
    workflowRunId: run.runId,
    workflowUrl: run.url,
    workflowState: run.state,
    workflowRunCreatedAt: run.createdAt,
    workflowRunCompletedAt: run.completedAt,
    workflowRunCallerIp: run.callerIp,
    workflowRunResponse:
      redaction?.body && run.response !== undefined ? redactedText(run.response) : run.response,
    steps: [
      ...stepGroups(steps, run, context.prefix),
      ...failedStepGroup(run, context.prefix),
      ...pendingStepGroup(run, context.pending, context.prefix),
    ],
    label: run.labels?.[0],
    labels: run.labels,
    flowControlKey: run.settings.flowControl?.key,
    dlqId: run.dlq?.dlqId,
    resumedFrom: run.resumedFrom,
    invoker: run.invoker
      ? {
          workflowRunId: run.invoker.runId,
          workflowUrl: run.invoker.url,
          workflowRunCreatedAt: run.invoker.createdAt,
        }
      : undefined,
    failureFunction: run.dlq?.failureMessageId
      ? {
          messageId: run.dlq.failureMessageId,
          url: run.settings.failureCallback?.url,
          state: run.failureFunctionState,
          dlqId: run.dlq.dlqId,
          failStatus: run.dlq.responseStatus,
          failHeaders: run.dlq.responseHeader ?? {},
          // The failed step's response (its body as the failure callback's `body` carried it).
          ...textOrBase64(
            run.dlq.responseBody ?? new Uint8Array(0),
            'failResponse',
            'failResponseBase64',
          ),
          responseStatus: run.dlq.failureResponseStatus,
        }
      : undefined,
  };
}

/** A run in the workflow DLQ: the failed step message's fields plus the run's. */
/**
 * @param bodyCut a list's cut: the failed message's body is cut to it here (the run is stored
 *   as one document, so storage reads it whole), with `bodyTruncated` and `bodySize`.
 */
export function workflowDlqJson(run: WorkflowRun, bodyCut?: number): Record<string, unknown> {
  const dlq = run.dlq;
  if (!dlq) throw new Error(`run ${run.runId} is not in the DLQ`);
  const body = dlq.message.body;
  const cut = bodyCut !== undefined && body.byteLength > bodyCut;
  const message = cut ? { ...dlq.message, body: body.subarray(0, bodyCut) } : dlq.message;
  const info = {
    state: run.failureFunctionState,
    responseStatus: dlq.failureResponseStatus,
    messageId: dlq.failureMessageId,
  };
  return {
    ...messageJson(message, cut ? body.byteLength : undefined),
    dlqId: dlq.dlqId,
    workflowRunId: run.runId,
    workflowUrl: run.url,
    workflowCreatedAt: run.createdAt,
    failureCallback: run.settings.failureCallback?.url,
    failureFunctionState: run.failureFunctionState,
    failureCallbackInfo: run.failureFunctionState ? info : undefined,
    responseStatus: dlq.responseStatus,
    responseHeader: dlq.responseHeader,
    ...(dlq.responseBody
      ? textOrBase64(dlq.responseBody, 'responseBody', 'responseBodyBase64')
      : {}),
    error: dlq.error,
    dlqCreatedAt: dlq.createdAt,
  };
}
