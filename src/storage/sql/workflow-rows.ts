/**
 * The `workflow_runs` / `workflow_steps` row shapes (the same columns in both SQL drivers), their
 * mapping, and the WHERE clause of a `WorkflowRunFilter`; see `rows.ts` for the conventions.
 */
import type { HeaderMap, Message } from '../../core/types.js';
import {
  workflowRunCursor,
  type WorkflowCallType,
  type WorkflowRun,
  type WorkflowStep,
} from '../../core/workflow.js';
import type { WorkflowWaiter } from '../../core/workflow-events.js';
import type { Page, WorkflowRunFilter } from '../driver.js';
import {
  joinLabels,
  labelsClause,
  likeEscape,
  splitLabels,
  urlParts,
  type Bind,
} from './filter.js';
import { cutSize, type Int8 } from './rows.js';

export interface WorkflowRunRow {
  account_id: string;
  run_id: string;
  url: string;
  state: string;
  created_at: Int8;
  updated_at: Int8;
  caller_ip: string;
  labels: string | null;
  flow_control_key: string | null;
  dlq_id: string | null;
  failure_state: string | null;
  doc: string;
  url_host: string | null;
  url_path: string | null;
  dlq_response_status: Int8 | null;
}

export interface WorkflowStepRow {
  account_id: string;
  run_id: string;
  seq: Int8;
  message_id: string;
  call_type: string;
  created_at: Int8;
  body: Uint8Array;
  /** The whole length of `body` when a list may have cut it. */
  body_size?: Int8 | null;
  /** What the entry's message was delivered with (017); NULL on entries stored before. */
  retries: Int8 | null;
  retry_delay: string | null;
  /** JSON of the forwarded headers (`HeaderMap`). */
  headers: string | null;
}

export const WORKFLOW_RUN_COLUMNS = [
  'account_id',
  'run_id',
  'url',
  'state',
  'created_at',
  'updated_at',
  'caller_ip',
  'labels',
  'flow_control_key',
  'dlq_id',
  'failure_state',
  'doc',
  'url_host',
  'url_path',
  'dlq_response_status',
] as const;

/** Byte fields of the JSON document travel as base64. */
const b64 = (bytes: Uint8Array): string =>
  Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
const unb64 = (text: string): Uint8Array => Buffer.from(text, 'base64');

interface StoredDlq {
  dlqId: string;
  createdAt: number;
  message: Omit<Message, 'body'> & { body: string };
  responseStatus?: number;
  responseHeader?: HeaderMap;
  responseBody?: string;
  error?: string;
  failureMessageId?: string;
  failureResponseStatus?: number;
}

/** The insert values, in `WORKFLOW_RUN_COLUMNS` order. */
export function workflowRunValues(run: WorkflowRun): (string | number | null)[] {
  const doc: Record<string, unknown> = {
    settings: run.settings,
    completedAt: run.completedAt,
    response: run.response,
    resumedFrom: run.resumedFrom,
    invoker: run.invoker,
    keptEvents: run.keptEvents?.map((e) => ({ ...e, data: b64(e.data) })),
  };
  if (run.dlq) {
    const { message, responseBody, ...rest } = run.dlq;
    const stored: StoredDlq = { ...rest, message: { ...message, body: b64(message.body) } };
    if (responseBody) stored.responseBody = b64(responseBody);
    doc.dlq = stored;
  }
  return [
    run.accountId,
    run.runId,
    run.url,
    run.state,
    run.createdAt,
    run.updatedAt,
    run.callerIp,
    joinLabels(run.labels),
    run.settings.flowControl?.key ?? null,
    run.dlq?.dlqId ?? null,
    run.failureFunctionState ?? null,
    JSON.stringify(doc),
    urlParts(run.url).host,
    urlParts(run.url).path,
    run.dlq?.responseStatus ?? null,
  ];
}

export function workflowRunFromRow(row: WorkflowRunRow): WorkflowRun {
  const doc = JSON.parse(row.doc) as {
    settings: WorkflowRun['settings'];
    completedAt?: number;
    response?: string;
    resumedFrom?: WorkflowRun['resumedFrom'];
    invoker?: WorkflowRun['invoker'];
    keptEvents?: { eventId: string; data: string; createdAt: number }[];
    dlq?: StoredDlq;
  };
  const run: WorkflowRun = {
    accountId: row.account_id,
    runId: row.run_id,
    url: row.url,
    state: row.state as WorkflowRun['state'],
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
    callerIp: row.caller_ip,
    settings: doc.settings,
  };
  const labels = splitLabels(row.labels);
  if (labels) run.labels = labels;
  if (doc.completedAt !== undefined) run.completedAt = doc.completedAt;
  if (doc.response !== undefined) run.response = doc.response;
  if (doc.resumedFrom) run.resumedFrom = doc.resumedFrom;
  if (doc.invoker) run.invoker = doc.invoker;
  if (doc.keptEvents && doc.keptEvents.length > 0) {
    run.keptEvents = doc.keptEvents.map((e) => ({ ...e, data: unb64(e.data) }));
  }
  if (row.failure_state) {
    run.failureFunctionState = row.failure_state as WorkflowRun['failureFunctionState'];
  }
  if (doc.dlq) {
    const { message, responseBody, ...rest } = doc.dlq;
    run.dlq = { ...rest, message: { ...message, body: unb64(message.body) } };
    if (responseBody !== undefined) run.dlq.responseBody = unb64(responseBody);
  }
  return run;
}

export function workflowStepFromRow(row: WorkflowStepRow): WorkflowStep {
  const step: WorkflowStep = {
    accountId: row.account_id,
    runId: row.run_id,
    seq: Number(row.seq),
    messageId: row.message_id,
    callType: row.call_type as WorkflowCallType,
    createdAt: Number(row.created_at),
    body: row.body,
  };
  const size = cutSize(row.body, row.body_size);
  if (size !== undefined) step.bodySize = size;
  if (row.retries !== null) step.retries = Number(row.retries);
  if (row.retry_delay !== null) step.retryDelay = row.retry_delay;
  if (row.headers !== null) step.headersJson = row.headers;
  return step;
}

/** The `retries, retry_delay, headers` values of a new history entry, in that order. */
export function workflowStepDeliveryValues(
  step: WorkflowStep,
): [retries: number | null, retryDelay: string | null, headers: string | null] {
  return [step.retries ?? null, step.retryDelay ?? null, step.headersJson ?? null];
}

/**
 * The WHERE clause (after `account_id = …`) of a run list, with the keyset condition of the
 * cursor. In the DLQ, runs are ordered by `dlq_id` (which starts with its creation time); else by
 * `(created_at, run_id)`, since run ids chosen by the SDK do not sort by time.
 */
export function workflowRunWhere(
  filter: WorkflowRunFilter,
  cursor: string | undefined,
  bind: Bind,
) {
  const clauses: string[] = [];
  const anyOf = (column: string, values: readonly unknown[] | undefined): void => {
    if (values && values.length > 0) clauses.push(`${column} IN (${values.map(bind).join(', ')})`);
  };
  anyOf('run_id', filter.runIds);
  anyOf('url', filter.urls);
  anyOf('state', filter.states);
  anyOf('caller_ip', filter.callerIps);
  anyOf('flow_control_key', filter.flowControlKeys);
  anyOf('dlq_id', filter.dlqIds);
  anyOf('failure_state', filter.failureFunctionStates);
  anyOf('url_host', filter.hosts);
  anyOf('url_path', filter.paths);
  anyOf('dlq_response_status', filter.responseStatuses);
  if (filter.messageIds && filter.messageIds.length > 0) {
    // A step's message in the history (through workflow_steps_message), or one not final yet (a
    // call on its way, its callback: the messages' primary key), as one IN over a UNION ALL (not
    // two INs joined by OR) so that it stays a semi-join of index reads; (account_id, run_id)
    // since run ids are the SDK's choice.
    const ids = (): string => filter.messageIds?.map(bind).join(', ') ?? '';
    clauses.push(
      '(account_id, run_id) IN (SELECT account_id, run_id FROM workflow_steps ' +
        `WHERE message_id IN (${ids()}) UNION ALL SELECT account_id, workflow_run_id ` +
        `FROM messages WHERE id IN (${ids()}) AND workflow_run_id IS NOT NULL)`,
    );
  }
  if (filter.urlPrefixes && filter.urlPrefixes.length > 0) {
    const one = (p: string) => `url LIKE ${bind(`${likeEscape(p)}%`)} ESCAPE '\\'`;
    clauses.push(`(${filter.urlPrefixes.map(one).join(' OR ')})`);
  }
  if (filter.labels && filter.labels.length > 0) clauses.push(labelsClause(filter.labels, bind));
  if (filter.createdAt !== undefined) clauses.push(`created_at = ${bind(filter.createdAt)}`);
  const inDlq = filter.inDlq === true;
  if (inDlq) clauses.push('dlq_id IS NOT NULL');
  // In the DLQ, the date bounds apply to when the run entered it: the DLQ id's leading time.
  if (filter.fromDate !== undefined) {
    clauses.push(
      inDlq
        ? `dlq_id >= ${bind(dlqIdBound(filter.fromDate))}`
        : `created_at >= ${bind(filter.fromDate)}`,
    );
  }
  if (filter.toDate !== undefined) {
    clauses.push(
      inDlq
        ? `dlq_id < ${bind(dlqIdBound(filter.toDate + 1))}`
        : `created_at <= ${bind(filter.toDate)}`,
    );
  }
  if (cursor !== undefined) {
    if (inDlq) clauses.push(`dlq_id < ${bind(cursor)}`);
    else {
      const [time, runId] = parseRunCursor(cursor);
      clauses.push(
        `(created_at < ${bind(time)} OR (created_at = ${bind(time)} AND run_id < ${bind(runId)}))`,
      );
    }
  }
  const order = inDlq ? 'dlq_id DESC' : 'created_at DESC, run_id DESC';
  return { where: clauses.length > 0 ? clauses.join(' AND ') : '1 = 1', order };
}

/** The smallest DLQ id created at `ms` (ids are `dlq_` + 9 base-36 digits of the time + random). */
function dlqIdBound(ms: number): string {
  return `dlq_${Math.max(0, ms).toString(36).padStart(9, '0')}`;
}

function parseRunCursor(cursor: string): [number, string] {
  const sep = cursor.indexOf('_');
  const time = Number(cursor.slice(0, sep));
  if (sep <= 0 || !Number.isSafeInteger(time)) throw new RangeError(`invalid cursor ${cursor}`);
  return [time, cursor.slice(sep + 1)];
}

/** A page of runs and the cursor that continues after its last one. */
export function workflowRunPage(
  runs: WorkflowRun[],
  count: number,
  inDlq: boolean,
): Page<WorkflowRun> {
  if (runs.length <= count) return { items: runs };
  const items = runs.slice(0, count);
  const last = items[items.length - 1];
  if (!last) return { items };
  return { items, cursor: workflowRunCursor(last, inDlq) };
}

export interface WorkflowWaiterRow {
  account_id: string;
  id: string;
  event_id: string;
  run_id: string;
  deadline: Int8;
  created_at: Int8;
  doc: string;
}

export const WORKFLOW_WAITER_COLUMNS = [
  'account_id',
  'id',
  'event_id',
  'run_id',
  'deadline',
  'created_at',
  'doc',
] as const;

type WaiterDoc = Pick<WorkflowWaiter, 'url' | 'step' | 'headers' | 'timeoutUrl' | 'timeoutHeaders'>;

/** The insert values, in `WORKFLOW_WAITER_COLUMNS` order. */
export function workflowWaiterValues(w: WorkflowWaiter): (string | number)[] {
  const doc: WaiterDoc = {
    url: w.url,
    step: w.step,
    headers: w.headers,
    timeoutUrl: w.timeoutUrl,
    timeoutHeaders: w.timeoutHeaders,
  };
  return [w.accountId, w.id, w.eventId, w.runId, w.deadline, w.createdAt, JSON.stringify(doc)];
}

export function workflowWaiterFromRow(row: WorkflowWaiterRow): WorkflowWaiter {
  const doc = JSON.parse(row.doc) as WaiterDoc;
  const waiter: WorkflowWaiter = {
    accountId: row.account_id,
    eventId: row.event_id,
    id: row.id,
    runId: row.run_id,
    url: doc.url,
    deadline: Number(row.deadline),
    createdAt: Number(row.created_at),
    step: doc.step,
    headers: doc.headers,
  };
  if (doc.timeoutUrl !== undefined) waiter.timeoutUrl = doc.timeoutUrl;
  if (doc.timeoutHeaders !== undefined) waiter.timeoutHeaders = doc.timeoutHeaders;
  return waiter;
}
