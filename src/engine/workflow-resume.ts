/**
 * Resume and restart of a run in the workflow DLQ. Either makes a new run (new id, as the
 * protocol defines) and takes the old one out of the DLQ, in one transaction:
 * - resume copies the history but the failed step and delivers the failed step again, last, so
 *   the steps that completed are not run again (their results are in the copied history), also
 *   the other branches of a parallel group the failed step belonged to;
 * - restart copies only the trigger's payload and starts from the first step.
 */
import { newMessageId } from '../core/ids.js';
import type { Message } from '../core/types.js';
import {
  newWorkflowRunId,
  parseStepBody,
  type WorkflowRun,
  type WorkflowStep,
} from '../core/workflow.js';
import type { Executor } from '../storage/driver.js';
import { historyEntry } from './publisher.js';
import { eventOf } from './records.js';

/** What the caller overrides for the remaining steps (resume headers); absent fields stay. */
export interface WorkflowOverride {
  retries?: number;
  /** Unix ms the next step is due (from `<P>-Delay`). */
  notBefore?: number;
  retryDelayExpression?: string;
  flowControl?: WorkflowRun['settings']['flowControl'];
  labels?: string[];
  failureCallbackUrl?: string;
}

export async function resumeWorkflowRun(p: {
  executor: Executor;
  run: WorkflowRun;
  kind: 'resume' | 'restart';
  override: WorkflowOverride;
  now: number;
}): Promise<{ run: WorkflowRun; message: Message } | undefined> {
  const { run: old, override: o, now } = p;
  const failed = old.dlq?.message;
  if (!old.dlq || !failed) return undefined;
  const runId = newWorkflowRunId(now);
  const settings = { ...old.settings };
  if (o.retries !== undefined) settings.retries = o.retries;
  if (o.retryDelayExpression !== undefined) settings.retryDelayExpression = o.retryDelayExpression;
  if (o.flowControl) settings.flowControl = o.flowControl;
  if (o.failureCallbackUrl !== undefined) {
    settings.failureCallback = {
      method: 'POST',
      headers: {},
      ...settings.failureCallback,
      url: o.failureCallbackUrl,
    };
  }
  const run: WorkflowRun = {
    accountId: old.accountId,
    runId,
    url: old.url,
    state: 'RUN_STARTED',
    createdAt: now,
    updatedAt: now,
    callerIp: old.callerIp,
    settings,
    resumedFrom: { runId: old.runId, kind: p.kind },
  };
  const labels = o.labels ?? old.labels;
  if (labels) run.labels = labels;

  return p.executor.transaction(async (tx) => {
    const current = await tx.workflowRunGet({ accountId: old.accountId, runId: old.runId });
    if (!current || current.dlq?.dlqId !== old.dlq?.dlqId) return undefined; // resumed or deleted meanwhile
    const steps = await tx.workflowStepList({ accountId: old.accountId, runId: old.runId });
    const failedAt = steps.findIndex((s) => s.messageId === failed.id);
    // A restart's message is the new trigger: entry 0 of an otherwise empty history. A resume
    // keeps every entry but the failed one, which goes again at the end. When it was one branch
    // of a parallel group, the results other branches published stay, and the SDK (seeing that
    // branch's plan entry last) runs exactly that branch again; a branch whose result never came
    // (its run had failed meanwhile) is delivered again too.
    const rest = p.kind === 'restart' ? [] : steps.filter((s) => s.messageId !== failed.id);
    const unfinished = failedAt === -1 ? [] : unfinishedBranches(rest);
    const keep = rest.filter((s) => !unfinished.includes(s));
    const [initial] = steps;
    const again = p.kind === 'restart' || failedAt !== -1; // the delivery is a history entry
    const notBefore = o.notBefore ?? now;
    const message: Message = {
      ...failed,
      id: newMessageId(now),
      url: p.kind === 'restart' ? old.url : failed.url,
      retried: 0,
      maxRetries: settings.retries,
      notBefore,
      createdAt: now,
      dueAt: Math.max(now, notBefore),
      spec: {
        ...failed.spec,
        ...(p.kind === 'restart' ? { headers: settings.headers, method: 'POST' as const } : {}),
        labels,
        retryDelayExpression: settings.retryDelayExpression,
        flowControl: settings.flowControl,
        failureCallback: settings.failureCallback,
        workflow: {
          runId,
          url: run.url,
          createdAt: now,
          callType: p.kind === 'restart' ? 'step' : (failed.spec.workflow?.callType ?? 'step'),
        },
      },
      body: p.kind === 'restart' ? (initial?.body ?? new Uint8Array(0)) : failed.body,
    };
    const messages = [
      message,
      ...unfinished.map((step) => ({ ...message, id: newMessageId(now), body: step.body })),
    ];
    await tx.workflowRunInsert({ run });
    for (const step of keep) {
      await tx.workflowStepAppend({ step: { ...step, runId } });
    }
    if (again) {
      for (const m of messages) await tx.workflowStepAppend({ step: historyEntry(m) });
    }
    await tx.messageInsertMany({ messages });
    await tx.eventInsertMany({ events: messages.map((m) => eventOf(m, 'CREATED', now)) });
    const left: WorkflowRun = { ...current, updatedAt: now };
    delete left.dlq;
    await tx.workflowRunUpdate({ run: left });
    return { run, message };
  });
}

/**
 * The plan entries of a parallel group (the SDK's `stepId: 0` with a `targetStep`) in `steps`
 * whose branch has no result (no step with that `stepId`): branches to deliver again.
 */
function unfinishedBranches(steps: WorkflowStep[]): WorkflowStep[] {
  const parsed = steps.map((step) => ({
    step,
    body: step.seq === 0 ? undefined : parseStepBody(step.body),
  }));
  const done = new Set(
    parsed.flatMap(({ body }) =>
      typeof body?.stepId === 'number' && body.stepId > 0 ? [body.stepId] : [],
    ),
  );
  return parsed
    .filter(
      ({ body }) =>
        body?.stepId === 0 && typeof body.targetStep === 'number' && !done.has(body.targetStep),
    )
    .map(({ step }) => step);
}
