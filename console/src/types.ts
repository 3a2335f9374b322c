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
  WorkflowDlqMessage,
  WorkflowRun,
} from '../../src/sdk/types';

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

/** A point of a usage series: `x` is `YYYY-MM-DD HH:MM:SS +0000 UTC`. */
export interface DataPoint {
  x: string;
  y: number;
}

/** `GET /v2/usage?period=…` and the management API's `GET /v2/queue/stats/{id}`. */
export interface UsageStats {
  days: string[];
  daily_requests: (DataPoint & { workflow_message: number; workflow_run: number })[];
  daily_billings: DataPoint[];
  daily_bandwidths: DataPoint[];
  daily_used: DataPoint[];
  daily_used_workflow: DataPoint[];
  daily_queue_messages: { id: string; data_points: DataPoint[] }[];
  daily_workflow_messages: { id: string; data_points: DataPoint[] }[];
  dlq_message_count: number;
  total_monthly_billing: number;
}

/** `GET /v2/usage/now`: the account's messages that are not final, and its DLQ size. */
export interface UsageNow {
  due: number;
  delayed: number;
  waiting: number;
  inFlight: number;
  dlq: number;
  /** Runs in the workflow DLQ. */
  workflowDlq: number;
  /** Each count but `dlq` stops here: a count equal to it means "at least". */
  limit: number;
}

/** `GET /v2/queues`. */
export interface Queue {
  name: string;
  createdAt: number;
  updatedAt: number;
  parallelism: number;
  paused: boolean;
  lag: number;
}

/** `GET /v2/flowControl`. */
export interface FlowControlKey {
  flowControlKey: string;
  waitListSize: number;
  parallelismMax: number;
  parallelismCount: number;
  rateMax: number;
  rateCount: number;
  ratePeriod: number;
  ratePeriodStart: number;
  isPinnedParallelism: boolean;
  isPinnedRate: boolean;
  isPaused: boolean;
}

/** The management API's account object (the fields the console shows). */
export interface Account {
  id: string;
  type: string;
  region: string;
  budget: number;
  created_by?: string;
  customer_id?: string;
  creation_time?: number;
  token?: string;
}
