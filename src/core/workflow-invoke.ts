/**
 * `context.invoke`, pure: the invoke request the SDK sends as the invoked run's trigger body, and
 * the invoke step the invoker resumes with. See docs/workflows.md. No I/O.
 */
import { badRequest } from './errors.js';
import { isJsonObject } from './json.js';
import type { WorkflowRun } from './workflow.js';

/**
 * Deepest chain of runs invoking runs: an invoke whose `<P>-Workflow-Invoke-Count` (the SDK
 * counts the depth and forwards it) is beyond it is refused, so an invoke loop ends.
 */
export const MAX_INVOKE_DEPTH = 100;

/** The body of an invoked run's trigger (the SDK's `InvokeWorkflowRequest`). */
export interface InvokeRequest {
  /** The invoker's run id. */
  workflowRunId: string;
  /** The invoked run's payload (its history entry 0), when there is one. */
  body?: string;
  /** The invoker's invoke step, which gets the result. */
  step: Record<string, unknown>;
}

/**
 * Parses the body of a trigger with `<P>-Workflow-Invoke: true`. Its `headers` (the invoker's
 * request headers, including the client's `Authorization`) are not kept: the invoker's result
 * step is sent with the invoker run's own settings.
 *
 * @throws FerryError 400 naming the field for a body that is not an invoke request.
 */
export function parseInvokeRequest(body: Uint8Array, field: string): InvokeRequest {
  const fail = (what: string) => badRequest(`${field}: invalid invoke request body: ${what}`);
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(body).toString('utf8'));
  } catch {
    throw fail('expected JSON {workflowRunId, step, body}');
  }
  if (!isJsonObject(value)) throw fail('expected JSON {workflowRunId, step, body}');
  const { workflowRunId, step, body: payload } = value;
  if (typeof workflowRunId !== 'string' || workflowRunId === '') {
    throw fail('workflowRunId must be the invoking run id');
  }
  if (!isJsonObject(step)) throw fail('step must be the invoke step object');
  if (payload !== undefined && payload !== null && typeof payload !== 'string') {
    throw fail('body must be a string');
  }
  const out: InvokeRequest = { workflowRunId, step };
  if (typeof payload === 'string') out.body = payload;
  return out;
}

/** How an invoked run ended, for its invoker. */
export type InvokeResult =
  { kind: 'success'; body?: string } | { kind: 'failed'; body?: string } | { kind: 'canceled' };

/**
 * The invoke step the invoker resumes with: the SDK's step plus `out`, the JSON text of
 * `{body, isFailed, isCanceled}` (the SDK's `InvokeStepResponse`, `body` as the invoked run's
 * result text), and the invoked run's id, URL and creation time for the logs.
 */
export function invokeResultBody(
  step: Record<string, unknown>,
  invoked: WorkflowRun,
  result: InvokeResult,
): Uint8Array {
  const rest = { ...step };
  delete rest.out;
  const out = {
    body: result.kind === 'canceled' ? undefined : result.body,
    isFailed: result.kind === 'failed',
    isCanceled: result.kind === 'canceled',
  };
  return Buffer.from(
    JSON.stringify({
      ...rest,
      out: JSON.stringify(out),
      invokedWorkflowRunId: invoked.runId,
      invokedWorkflowUrl: invoked.url,
      invokedWorkflowCreatedAt: invoked.createdAt,
    }),
  );
}
