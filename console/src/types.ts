/** The API's shapes, from the SDK (types only: the console is a client of the HTTP API). */
import type { DlqMessage, Event } from '../../src/sdk/types';

export type {
  DlqMessage,
  Event,
  EventState,
  HeaderMap,
  Message,
  Schedule,
  SigningKeys,
  UrlGroup,
} from '../../src/sdk/types';

/**
 * A workflow run in `GET /v2/workflows/logs` (the SDK's `WorkflowRun`; its module is not
 * types-only, so the shape is restated here).
 */
export interface WorkflowRun {
  workflowRunId: string;
  workflowUrl: string;
  workflowState: 'RUN_STARTED' | 'RUN_SUCCESS' | 'RUN_FAILED' | 'RUN_CANCELED';
  workflowRunCreatedAt: number;
  workflowRunCompletedAt?: number;
  workflowRunResponse?: string;
  steps: { type: 'sequential' | 'parallel'; steps: Record<string, unknown>[] }[];
  labels?: string[];
  dlqId?: string;
}

/** A run in the workflow DLQ (`GET /v2/workflows/dlq`). */
export interface WorkflowDlqMessage {
  dlqId: string;
  workflowRunId: string;
  workflowUrl: string;
  workflowCreatedAt: number;
  failureFunctionState?: string;
  responseStatus?: number;
}

/** `GET /v2/events`: `cursor` is absent on the last page. */
export interface EventPage {
  cursor?: string;
  events: Event[];
}

/** `GET /v2/dlq`: `cursor` is absent on the last page. */
export interface DlqPage {
  cursor?: string;
  messages: DlqMessage[];
}
