import { assertId, assertNonEmpty, bulkDelete, withCursor } from './http.js';
import type { HttpClient, QueryValue } from './http.js';

import type {
  ResumedRun,
  WorkflowDlqMessage,
  WorkflowDlqSelection,
  WorkflowFilter,
  WorkflowRun,
} from './types.js';

function selectionQuery(sel: WorkflowDlqSelection): Record<string, QueryValue> {
  if ('dlqIds' in sel) {
    assertNonEmpty('dlqIds', sel.dlqIds);
    return { dlqIds: sel.dlqIds };
  }
  return { ...sel.filter, cursor: sel.cursor, count: sel.count };
}

/** `/v2/workflows/…`: workflow runs, their logs, the workflow DLQ, resume and restart. */
export class WorkflowsApi {
  constructor(private readonly http: HttpClient) {}

  /** One page of runs, newest first; `cursor` is absent on the last page. */
  async logs(
    req: { filter?: WorkflowFilter; cursor?: string; count?: number } = {},
  ): Promise<{ runs: WorkflowRun[]; cursor?: string }> {
    const res = await this.http.request<{ runs: WorkflowRun[]; cursor?: string }>({
      method: 'GET',
      path: '/v2/workflows/logs',
      query: { ...req.filter, cursor: req.cursor, count: req.count },
    });
    return withCursor(res.cursor, { runs: res.runs });
  }

  /** Cancels runs by id; resolves with how many were running. */
  async cancel(workflowRunIds: string[]): Promise<{ cancelled: number }> {
    assertNonEmpty('workflowRunIds', workflowRunIds);
    return this.http.request<{ cancelled: number }>({
      method: 'DELETE',
      path: '/v2/workflows/runs',
      query: { workflowRunIds },
    });
  }

  /** One page of the workflow DLQ (count ≤ 100). */
  async dlq(
    req: { filter?: WorkflowFilter; cursor?: string; count?: number } = {},
  ): Promise<{ messages: WorkflowDlqMessage[]; cursor?: string }> {
    const res = await this.http.request<{ messages: WorkflowDlqMessage[]; cursor?: string }>({
      method: 'GET',
      path: '/v2/workflows/dlq',
      query: { ...req.filter, cursor: req.cursor, count: req.count },
    });
    return withCursor(res.cursor, { messages: res.messages });
  }

  /**
   * Resumes runs from their failed step (`restart`: from the beginning), each as a new run.
   * `headers` are the override headers (`{'Svc-Retries': '5'}`) for the remaining steps. Call
   * again with the returned `cursor` until it is absent.
   */
  async resume(
    sel: WorkflowDlqSelection,
    opts: { restart?: boolean; headers?: Record<string, string> } = {},
  ): Promise<{ workflowRuns: ResumedRun[]; cursor?: string }> {
    const res = await this.http.request<{ workflowRuns: ResumedRun[]; cursor?: string }>({
      method: 'POST',
      path: `/v2/workflows/dlq/${opts.restart ? 'restart' : 'resume'}`,
      query: selectionQuery(sel),
      headers: opts.headers,
    });
    return withCursor(res.cursor, { workflowRuns: res.workflowRuns });
  }

  /**
   * Removes the listed entries, or one page of those matching the filter (the runs keep their
   * state); ids not in the DLQ are passed over, so `deleted` may be fewer than the ids given.
   */
  async deleteDlqMany(sel: WorkflowDlqSelection): Promise<{ deleted: number; cursor?: string }> {
    return bulkDelete(this.http, '/v2/workflows/dlq', selectionQuery(sel));
  }

  /** Removes one workflow DLQ entry (the run keeps its state). */
  async deleteDlq(dlqId: string): Promise<void> {
    await this.http.request<unknown>({
      method: 'DELETE',
      path: `/v2/workflows/dlq/${assertId('dlqId', dlqId)}`,
    });
  }
}
