/**
 * Workflow runs, pure: the run record, the protocol headers a publish carries, the history body a
 * step delivery carries and the failure-callback body. No I/O.
 *
 * The protocol is the one the `@upstash/workflow` SDK speaks (see docs/workflows.md): the SDK
 * publishes every step result back to Ferry as a message to the workflow URL; Ferry appends it to
 * the run's history and delivers it with the history up to that message as the body. Ferry never
 * interprets a step's content beyond showing it in the logs.
 */
import { badRequest } from './errors.js';
import { quoteValue } from './headers.js';
import { newId } from './ids.js';
import { refuseDotSegment } from './names.js';
import type { IncomingHeaders } from './publish-request.js';
import type { Redaction } from './redaction.js';
import type { CallbackSpec, FlowControl, HeaderMap, Message } from './types.js';

export type WorkflowRunState = 'RUN_STARTED' | 'RUN_SUCCESS' | 'RUN_FAILED' | 'RUN_CANCELED';
export const WORKFLOW_RUN_STATES: readonly WorkflowRunState[] = [
  'RUN_STARTED',
  'RUN_SUCCESS',
  'RUN_FAILED',
  'RUN_CANCELED',
];

export type FailureFunctionState =
  'CALLBACK_INPROGRESS' | 'CALLBACK_SUCCESS' | 'CALLBACK_FAIL' | 'CALLBACK_CANCELED';
export const FAILURE_FUNCTION_STATES: readonly FailureFunctionState[] = [
  'CALLBACK_INPROGRESS',
  'CALLBACK_SUCCESS',
  'CALLBACK_FAIL',
  'CALLBACK_CANCELED',
];

/**
 * What a message of a run is: `step` goes to the workflow URL and is part of the history;
 * `toCallback` is a `context.call` to a third-party URL; `fromCallback` brings that call's
 * response back to the workflow URL; `failureCall` is the failure function's call.
 */
export type WorkflowCallType = 'step' | 'toCallback' | 'fromCallback' | 'failureCall';
const CALL_TYPES: readonly WorkflowCallType[] = ['step', 'toCallback', 'fromCallback'];

/** Stored on every message of a run (`MessageSpec.workflow`). */
export interface MessageWorkflow {
  runId: string;
  /** The workflow URL (also for a `toCallback` message, whose own URL is the third party's). */
  url: string;
  /** Run creation time, ms (sent as `<P>-Workflow-CreatedAt`). */
  createdAt: number;
  callType: WorkflowCallType;
  /**
   * Set on the timeout message of a `context.waitForEvent` (the event id): the message joins the
   * history only when it comes due before a notify (see core/workflow-events.ts).
   */
  waitFor?: string;
}

/**
 * The settings of the trigger request, applied to every later step of the run: the SDK sends
 * them only once (retries, failure URL, user headers), as the protocol defines.
 */
export interface WorkflowRunSettings {
  /** Forwarded headers of the trigger (the user's headers and the protocol version). */
  headers: HeaderMap;
  retries: number;
  retryDelayExpression?: string;
  timeoutMs?: number;
  flowControl?: FlowControl;
  failureCallback?: CallbackSpec;
  /**
   * The trigger's `<P>-Redact-Fields`: every message of the run is redacted alike, and the logs
   * redact the steps' content with it (the SDK sends settings only with the trigger).
   */
  redact?: Redaction;
}

/** A run in the workflow DLQ: the step message that failed and its last response. */
export interface WorkflowDlq {
  dlqId: string;
  /** When the run entered the DLQ, ms. */
  createdAt: number;
  message: Message;
  responseStatus?: number;
  responseHeader?: HeaderMap;
  responseBody?: Uint8Array;
  error?: string;
  /** The failure function's message, when one was sent. */
  failureMessageId?: string;
  /** The failure function's last response. */
  failureResponseStatus?: number;
}

export interface WorkflowRun {
  accountId: string;
  /** `wfr_…`: chosen by the SDK (or Ferry, for a resumed or restarted run). */
  runId: string;
  url: string;
  state: WorkflowRunState;
  createdAt: number;
  updatedAt: number;
  completedAt?: number;
  callerIp: string;
  labels?: string[];
  settings: WorkflowRunSettings;
  /** The body of the completion call: the workflow's result. */
  response?: string;
  failureFunctionState?: FailureFunctionState;
  /** Present while the run is in the workflow DLQ. */
  dlq?: WorkflowDlq;
  /** The run this one resumed or restarted. */
  resumedFrom?: { runId: string; kind: 'resume' | 'restart' };
  /**
   * Set on a run started by `context.invoke` in another run: that run, and its invoke step,
   * which gets this run's result (see engine/workflow-invoke.ts).
   */
  invoker?: WorkflowInvoker;
  /**
   * Events notified to this run (`POST /v2/notify/{runId}/{eventId}`, or a request to one of its
   * webhooks) before it waited for them: the run's `waitForEvent` takes them (the lookback).
   * Oldest first; they live as long as the run runs.
   */
  keptEvents?: KeptEvent[];
}

/** The run that invoked a run, and the step its result goes to. */
export interface WorkflowInvoker {
  runId: string;
  url: string;
  createdAt: number;
  /** The invoke step the SDK sent (`stepId`, `stepName`, `stepType`, `concurrent`…). */
  step: Record<string, unknown>;
}

/** An event kept for a run until it waits for it. */
export interface KeptEvent {
  eventId: string;
  data: Uint8Array;
  createdAt: number;
}

/** One entry of a run's history (the trigger's payload is entry 0). */
export interface WorkflowStep {
  accountId: string;
  runId: string;
  /** Position in the history, from 0; assigned by the store. */
  seq: number;
  messageId: string;
  callType: WorkflowCallType;
  body: Uint8Array;
  createdAt: number;
  /** Set when a list cut `body` (see `bodyCut`): the whole body's length, bytes. */
  bodySize?: number;
  /**
   * What the entry's message was delivered with, kept for the logs (the message row is deleted
   * once delivered): its retries setting (`maxRetries`), its retry-delay expression when it had
   * one, and its forwarded headers (`spec.headers`; the protocol headers follow from the run,
   * see {@link workflowDeliveryHeaders}). `retries` and `headersJson` are absent only on entries
   * stored before they were kept (migration 017); the logs show the run's settings for those.
   */
  retries?: number;
  retryDelay?: string;
  /**
   * The forwarded headers as their JSON text (a `HeaderMap`), as stored: parsed only by the logs
   * that show them, not by each delivery of a step, which reads the whole history for its body.
   */
  headersJson?: string;
}

/**
 * The list cursor that continues after `run` (the storage's keyset): its DLQ id in the workflow
 * DLQ, else its creation time and id.
 */
export function workflowRunCursor(run: WorkflowRun, inDlq: boolean): string {
  return inDlq && run.dlq ? run.dlq.dlqId : `${run.createdAt}_${run.runId}`;
}

export const newWorkflowRunId = (now?: number): string => newId('wfr', now);

const RUN_ID = /^[A-Za-z0-9_.-]{1,256}$/;

/**
 * The protocol headers a delivery of a run's message to the workflow URL carries besides the
 * message's own (forwarded) headers: the run's id, URL, creation time and labels, and the failure
 * flags on a failure function's call. The delivery sends them (engine/workflow-delivery.ts) and
 * the logs show them with each step.
 */
export function workflowDeliveryHeaders(
  prefix: string,
  run: Pick<WorkflowRun, 'runId' | 'url' | 'createdAt' | 'labels'>,
  callType: WorkflowCallType,
): Record<string, string> {
  const headers: Record<string, string> = {
    [`${prefix}-Workflow-RunId`]: run.runId,
    [`${prefix}-Workflow-Url`]: run.url,
    [`${prefix}-Workflow-CreatedAt`]: String(run.createdAt),
  };
  if (run.labels) headers[`${prefix}-Label`] = run.labels.join(',');
  if (callType === 'failureCall') {
    headers[`${prefix}-Workflow-Is-Failure`] = 'true';
    headers[`${prefix}-Workflow-Failure-Callback`] = 'true';
  }
  return headers;
}

/** The protocol headers of a publish, when it belongs to a run. */
export interface WorkflowHeaders {
  runId: string;
  /** `<P>-Workflow-Init: true`: the trigger that starts the run. */
  init: boolean;
  /** `<P>-Workflow-Url`; absent means the destination URL. */
  url?: string;
  callType: WorkflowCallType;
  /** `<P>-Retries` was sent (the run default is the protocol's 3 otherwise). */
  retriesSent: boolean;
  /** `<P>-Workflow-Invoke: true` on a trigger: a run started by `context.invoke`. */
  invoke: boolean;
}

/**
 * Reads `<P>-Workflow-RunId`, `-Init`, `-Url` and `-CallType` (case-insensitive). Undefined when
 * the publish has no run id: an ordinary message.
 *
 * @throws FerryError 400 for a malformed run id, init flag or call type.
 */
export function parseWorkflowHeaders(
  prefix: string,
  headers: IncomingHeaders,
): WorkflowHeaders | undefined {
  const p = prefix.toLowerCase();
  const get = (name: string): string | undefined => {
    const value = headers[`${p}-${name}`];
    return Array.isArray(value) ? value.join(', ') : value;
  };
  const runId = get('workflow-runid')?.trim();
  if (runId === undefined) return undefined;
  const field = (name: string) => `${prefix}-Workflow-${name}`;
  if (!RUN_ID.test(runId)) {
    throw badRequest(
      `invalid ${field('RunId')} ${quoteValue(runId)}: 1-256 letters, digits, "_", "-" or "."`,
    );
  }
  const initText = get('workflow-init')?.trim().toLowerCase() ?? 'false';
  if (initText !== 'true' && initText !== 'false') {
    throw badRequest(`invalid ${field('Init')} ${quoteValue(initText)}: expected true or false`);
  }
  const callText = get('workflow-calltype')?.trim() ?? 'step';
  const callType = CALL_TYPES.find((t) => t === callText);
  if (!callType) {
    throw badRequest(
      `invalid ${field('CallType')} ${quoteValue(callText)}: expected one of ${CALL_TYPES.join(', ')}`,
    );
  }
  // Only the request that starts a run names it; later steps of a run stored before `.` and `..`
  // were refused still reach it.
  if (initText === 'true') refuseDotSegment(runId, field('RunId'));
  const out: WorkflowHeaders = {
    runId,
    init: initText === 'true',
    callType,
    retriesSent: get('retries') !== undefined,
    invoke: get('workflow-invoke')?.trim().toLowerCase() === 'true',
  };
  const url = get('workflow-url')?.trim();
  if (url) out.url = url;
  return out;
}

const base64 = (bytes: Uint8Array): string =>
  Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');

/**
 * The body of a step delivery: the history up to and including `messageId`, as
 * `[{messageId, body: base64, callType}]`. Only the history up to the delivered message: the SDK
 * decides from it which step of a parallel group to run, so a later entry would confuse it.
 * Undefined when `messageId` is not in the history.
 */
export function historyBody(steps: WorkflowStep[], messageId: string): Uint8Array | undefined {
  const end = steps.findIndex((s) => s.messageId === messageId);
  if (end === -1) return undefined;
  return Buffer.from(JSON.stringify(rawSteps(steps.slice(0, end + 1))));
}

/** The history as `GET /v2/workflows/runs/{id}` returns it (the SDK's lazy fetch). */
export function rawSteps(
  steps: WorkflowStep[],
): { messageId: string; body: string; callType: string }[] {
  return steps.map((s) => ({ messageId: s.messageId, body: base64(s.body), callType: s.callType }));
}

/** The fields a workflow's failure-callback body adds to the failure-callback body. */
export function workflowFailureFields(
  run: WorkflowRun,
  initialPayload: Uint8Array,
): Record<string, unknown> {
  return {
    url: run.url,
    sourceBody: base64(initialPayload),
    workflowRunId: run.runId,
    workflowCreatedAt: run.createdAt,
    workflowUrl: run.url,
  };
}

/** Decodes a step body for the logs: the SDK's step object, or undefined when it is not JSON. */
export function parseStepBody(body: Uint8Array): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(Buffer.from(body).toString('utf8'));
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}
