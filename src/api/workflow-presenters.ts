/** The JSON shapes of workflow runs: a run in the logs, a run in the workflow DLQ. */
import type { WorkflowRun, WorkflowStep } from '../core/workflow.js';
import { parseStepBody } from '../core/workflow.js';
import { cutFields, messageJson, textOrBase64, trimCutUtf8 } from './presenters.js';

/** One step of a run's history as the logs show it (the SDK's step object, decoded). */
function stepJson(step: WorkflowStep): Record<string, unknown> {
  if (step.bodySize !== undefined) {
    // Cut by the list: not a whole step object any more, shown as the text it begins with.
    return {
      messageId: step.messageId,
      callType: step.callType,
      createdAt: step.createdAt,
      state: 'STEP_SUCCESS',
      ...(step.seq === 0 ? { stepId: 0, stepName: 'init', stepType: 'Initial' } : {}),
      ...(step.seq === 0
        ? textOrBase64(trimCutUtf8(step.body), 'out', 'outBase64')
        : textOrBase64(trimCutUtf8(step.body), 'body', 'bodyBase64')),
      ...cutFields(step.seq === 0 ? 'out' : 'body', step.bodySize),
    };
  }
  const parsed = step.seq === 0 ? undefined : parseStepBody(step.body);
  return {
    messageId: step.messageId,
    callType: step.callType,
    createdAt: step.createdAt,
    state: 'STEP_SUCCESS',
    ...(step.seq === 0
      ? {
          stepId: 0,
          stepName: 'init',
          stepType: 'Initial',
          ...textOrBase64(step.body, 'out', 'outBase64'),
        }
      : (parsed ?? textOrBase64(step.body, 'body', 'bodyBase64'))),
  };
}

/**
 * Groups the history as the SDK's `StepLogGroup`s: plan entries of a parallel group (stepId 0)
 * are left out, results with the same `concurrent` > 1 that follow each other form a parallel
 * group, every other step is its own sequential group.
 */
function stepGroups(steps: WorkflowStep[]): Record<string, unknown>[] {
  const groups: { type: 'sequential' | 'parallel'; steps: Record<string, unknown>[] }[] = [];
  for (const step of steps) {
    const json = stepJson(step);
    if (step.seq > 0 && json.stepId === 0) continue; // a plan entry of a parallel group
    const concurrent = typeof json.concurrent === 'number' ? json.concurrent : 1;
    const last = groups[groups.length - 1];
    if (concurrent > 1 && last?.type === 'parallel' && last.steps.length < concurrent) {
      last.steps.push(json);
    } else groups.push({ type: concurrent > 1 ? 'parallel' : 'sequential', steps: [json] });
  }
  return groups;
}

export function workflowRunJson(run: WorkflowRun, steps: WorkflowStep[]): Record<string, unknown> {
  return {
    workflowRunId: run.runId,
    workflowUrl: run.url,
    workflowState: run.state,
    workflowRunCreatedAt: run.createdAt,
    workflowRunCompletedAt: run.completedAt,
    workflowRunCallerIp: run.callerIp,
    workflowRunResponse: run.response,
    steps: stepGroups(steps),
    label: run.labels?.[0],
    labels: run.labels,
    flowControlKey: run.settings.flowControl?.key,
    dlqId: run.dlq?.dlqId,
    resumedFrom: run.resumedFrom,
    failureFunction: run.dlq?.failureMessageId
      ? {
          messageId: run.dlq.failureMessageId,
          url: run.settings.failureCallback?.url,
          state: run.failureFunctionState,
          dlqId: run.dlq.dlqId,
          failStatus: run.dlq.responseStatus,
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
