/**
 * The part of a delivery that belongs to workflow runs: the run's headers and, for a step, the
 * history up to the delivered message as the body (see core/workflow.ts).
 */
import type { Message } from '../core/types.js';
import { historyBody, workflowDeliveryHeaders } from '../core/workflow.js';
import type { Executor } from '../storage/driver.js';
import { claimWaitTimeout } from './workflow-events.js';

export interface WorkflowDeliveryOptions {
  executor: Executor;
  prefix: string;
  /**
   * Largest history sent as the body of a step delivery, bytes. A longer one is sent as an empty
   * body, and the SDK fetches it with `GET /v2/workflows/runs/{id}` (its "LazyFetch" feature).
   */
  inlineHistoryBytes: number;
}

export class WorkflowDelivery {
  constructor(private readonly options: WorkflowDeliveryOptions) {}

  /**
   * The extra headers and the body of a workflow message's delivery, or undefined when the
   * message must not be delivered: its run has ended (completed, cancelled, failed) or is gone.
   * A failure function's call is delivered after its run failed, by definition.
   */
  async prepare(
    message: Message,
  ): Promise<{ headers: Record<string, string>; body: Uint8Array } | undefined> {
    const wf = message.spec.workflow;
    if (!wf || wf.callType === 'toCallback') return { headers: {}, body: message.body };
    const { executor, prefix } = this.options;
    const run = await executor.workflowRunGet({ accountId: message.accountId, runId: wf.runId });
    if (!run || (wf.callType !== 'failureCall' && run.state !== 'RUN_STARTED')) {
      // A wait of a run that has ended stops waiting when its timeout comes.
      if (wf.waitFor !== undefined) {
        await executor.workflowWaiterDelete({ accountId: message.accountId, id: message.id });
      }
      return undefined;
    }
    const headers = workflowDeliveryHeaders(prefix, run, wf.callType);
    if (wf.callType !== 'step') return { headers, body: message.body };
    let steps = await executor.workflowStepList({ accountId: run.accountId, runId: run.runId });
    if (wf.waitFor !== undefined && !steps.some((s) => s.messageId === message.id)) {
      // A wait's timeout: delivered only when it comes before a notify (then it is a step).
      if (!(await claimWaitTimeout(executor, message))) return undefined;
      steps = await executor.workflowStepList({ accountId: run.accountId, runId: run.runId });
    }
    const history = historyBody(steps, message.id) ?? message.body;
    return {
      headers,
      body: history.byteLength > this.options.inlineHistoryBytes ? new Uint8Array(0) : history,
    };
  }
}
