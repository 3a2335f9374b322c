/**
 * `context.invoke`: a run (the invoker) starts another run and waits for its result. The SDK
 * publishes the invoked run's trigger with `<P>-Workflow-Invoke: true` and an invoke request as
 * the body (see core/workflow-invoke.ts); when the invoked run ends (success, failure or
 * cancel), Ferry appends the invoke step with the result to the invoker's history and delivers
 * it, as the SDK expects (it never publishes that step itself).
 */
import { newMessageId } from '../core/ids.js';
import type { Message } from '../core/types.js';
import { invokeResultBody, type InvokeResult } from '../core/workflow-invoke.js';
import type { WorkflowRun } from '../core/workflow.js';
import type { Executor } from '../storage/driver.js';
import { historyEntry } from './publisher.js';

/**
 * A step message of `run` to its workflow URL with the run's settings (those the trigger gave),
 * due now.
 */
export function runStepMessage(run: WorkflowRun, body: Uint8Array, now: number): Message {
  const s = run.settings;
  return {
    id: newMessageId(now),
    accountId: run.accountId,
    url: run.url,
    callerIp: run.callerIp,
    retried: 0,
    maxRetries: s.retries,
    notBefore: now,
    createdAt: now,
    dueAt: now,
    spec: {
      method: 'POST',
      headers: s.headers,
      labels: run.labels,
      retryDelayExpression: s.retryDelayExpression,
      timeoutMs: s.timeoutMs,
      flowControl: s.flowControl,
      redact: s.redact,
      failureCallback: s.failureCallback,
      workflow: { runId: run.runId, url: run.url, createdAt: run.createdAt, callType: 'step' },
    },
    body,
  };
}

/**
 * Gives an invoked run's end to its invoker, with `tx`: appends the invoke step with `result`
 * to the invoker's history and returns its message, which the caller stores (and meters).
 * Undefined when `run` was not invoked or its invoker is no longer running (cancelled: nobody
 * waits for the result).
 */
export async function deliverInvokeResult(
  tx: Executor,
  run: WorkflowRun,
  result: InvokeResult,
  now: number,
): Promise<Message | undefined> {
  const invoker = run.invoker;
  if (!invoker) return undefined;
  const target = await tx.workflowRunGet({
    accountId: run.accountId,
    runId: invoker.runId,
    lock: true,
  });
  if (!target || target.state !== 'RUN_STARTED' || target.createdAt !== invoker.createdAt) {
    return undefined;
  }
  const message = runStepMessage(target, invokeResultBody(invoker.step, run, result), now);
  await tx.workflowStepAppend({ step: historyEntry(message) });
  return message;
}
