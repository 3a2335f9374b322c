/**
 * What an attempt's outcome means for its workflow run, written in the outcome transaction:
 * a step that failed for good fails the run, puts it in the workflow DLQ and sends the failure
 * function's call; the end of that call sets the failure function's state.
 */
import { callbackBody, callbackMessage } from '../core/callbacks.js';
import { newDlqId } from '../core/ids.js';
import type { AttemptResult } from '../core/retry-timing.js';
import type { Message } from '../core/types.js';
import { workflowFailureFields, type WorkflowDlq, type WorkflowRun } from '../core/workflow.js';
import type { Executor } from '../storage/driver.js';
import { deliverInvokeResult } from './workflow-invoke.js';

/** A final outcome of a workflow message (`spec.workflow` set). */
export interface WorkflowOutcome {
  source: Message;
  attempt: AttemptResult;
  failed: boolean;
  finishedAt: number;
}

/** The DLQ fields of an attempt's end: the response, or the error when there was none. */
export function attemptFields(
  attempt: AttemptResult,
): Pick<WorkflowDlq, 'responseStatus' | 'responseHeader' | 'responseBody' | 'error'> {
  return attempt.kind === 'response'
    ? {
        responseStatus: attempt.status,
        responseHeader: attempt.headers,
        responseBody: attempt.body,
      }
    : { error: attempt.error };
}

/**
 * The failure function's call for a failed run: the failure-callback body plus the workflow's
 * fields (the trigger's payload as `sourceBody`), to the run's failure callback.
 */
export async function failureCall(
  tx: Executor,
  run: WorkflowRun,
  p: { source: Message; attempt: AttemptResult; dlqId: string; now: number },
): Promise<Message> {
  const spec = p.source.spec.failureCallback ?? run.settings.failureCallback;
  if (!spec) throw new Error(`workflow run ${run.runId} has no failure callback`);
  const [initial] = await tx.workflowStepList({ accountId: run.accountId, runId: run.runId });
  const body = {
    ...callbackBody({ source: p.source, attempt: p.attempt, dlqId: p.dlqId }),
    ...workflowFailureFields(run, initial?.body ?? new Uint8Array(0)),
  };
  const call = callbackMessage({
    source: p.source,
    kind: 'failure-callback',
    spec,
    body,
    now: p.now,
  });
  call.spec.workflow = {
    runId: run.runId,
    url: run.url,
    createdAt: run.createdAt,
    callType: 'failureCall',
  };
  return call;
}

/** Whether a failure of this message is the run's failure (instead of an ordinary DLQ entry). */
export function failsRun(message: Message): boolean {
  const type = message.spec.workflow?.callType;
  return type === 'step' || type === 'fromCallback' || type === 'failureCall';
}

/**
 * Applies the outcomes to their runs with `tx`; returns the failure-function messages to store
 * and the runs that failed. A run that is no longer running (cancelled meanwhile) is left as it
 * is.
 */
export async function applyWorkflowOutcomes(
  tx: Executor,
  outcomes: WorkflowOutcome[],
): Promise<{ created: Message[]; failedRuns: WorkflowRun[] }> {
  const created: Message[] = [];
  const failedRuns: WorkflowRun[] = [];
  for (const { source, attempt, failed, finishedAt } of outcomes) {
    const wf = source.spec.workflow;
    if (!wf) continue;
    const run = await tx.workflowRunGet({ accountId: source.accountId, runId: wf.runId });
    if (!run) continue;
    if (wf.callType === 'failureCall') {
      if (run.dlq?.failureMessageId !== source.id) continue;
      run.failureFunctionState = failed ? 'CALLBACK_FAIL' : 'CALLBACK_SUCCESS';
      if (attempt.kind === 'response') run.dlq.failureResponseStatus = attempt.status;
      run.updatedAt = finishedAt;
      await tx.workflowRunUpdate({ run });
      continue;
    }
    if (!failed || run.state !== 'RUN_STARTED') continue;
    const dlqId = newDlqId(finishedAt);
    run.state = 'RUN_FAILED';
    run.updatedAt = finishedAt;
    run.completedAt = finishedAt;
    run.dlq = {
      dlqId,
      createdAt: finishedAt,
      message: source,
      ...attemptFields(attempt),
    };
    delete run.failureFunctionState;
    delete run.keptEvents;
    if (run.invoker) {
      // An invoked run that failed: its invoker resumes with the failure.
      const body =
        attempt.kind === 'response' ? Buffer.from(attempt.body).toString('utf8') : attempt.error;
      const resumed = await deliverInvokeResult(tx, run, { kind: 'failed', body }, finishedAt);
      if (resumed) created.push(resumed);
    }
    if (source.spec.failureCallback) {
      const call = await failureCall(tx, run, { source, attempt, dlqId, now: finishedAt });
      run.dlq.failureMessageId = call.id;
      run.failureFunctionState = 'CALLBACK_INPROGRESS';
      created.push(call);
    }
    await tx.workflowRunUpdate({ run });
    failedRuns.push(run);
  }
  return { created, failedRuns };
}

/**
 * A failure-function call cancelled by the user (`DELETE /v2/messages/{id}`): its run's failure
 * function state becomes `CALLBACK_CANCELED`. Other messages are ignored.
 */
export async function markFailureCallsCancelled(
  tx: Executor,
  cancelled: Message[],
  now: number,
): Promise<void> {
  for (const message of cancelled) {
    const wf = message.spec.workflow;
    if (wf?.callType !== 'failureCall') continue;
    const run = await tx.workflowRunGet({ accountId: message.accountId, runId: wf.runId });
    if (!run || run.dlq?.failureMessageId !== message.id) continue;
    run.failureFunctionState = 'CALLBACK_CANCELED';
    run.updatedAt = now;
    await tx.workflowRunUpdate({ run });
  }
}
