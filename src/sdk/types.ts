/**
 * Shapes of the requests and responses of Ferry's HTTP API as the SDK sees them (API.md, "Object
 * shapes"). Times are Unix milliseconds unless a field says seconds.
 */
import type { EventState, HeaderMap, HttpMethod } from '../core/types.js';

export type { EventState, HeaderMap, HttpMethod };

/** A message that is not final yet, as `GET /v2/messages/{id}` shows it. */
export interface Message {
  messageId: string;
  /** The exact destination URL (a URL-group message has its endpoint's URL). */
  url: string;
  topicName?: string;
  endpointName?: string;
  method: HttpMethod;
  /** What the destination will receive, canonical names (`Test-Header`). */
  header: HeaderMap;
  /** The body when it is valid UTF-8; otherwise `bodyBase64` is set. */
  body?: string;
  bodyBase64?: string;
  maxRetries: number;
  /** Retries already done. */
  retried: number;
  /** When the message is or was first due, ms. */
  notBefore: number;
  createdAt: number;
  callback?: string;
  failureCallback?: string;
  queueName?: string;
  scheduleId?: string;
  callerIP: string;
  /** The first label (legacy field); `labels` holds all of them. */
  label?: string;
  labels?: string[];
  flowControlKey?: string;
  parallelism?: number;
  rate?: number;
  /** Flow-control rate period, seconds. */
  period?: number;
  retryDelayExpression?: string;
  /** Delivery timeout, seconds. */
  timeout?: number;
  /**
   * Where it stands now (`GET /v2/messages[/{id}]`): an attempt in flight (`ACTIVE`), due later
   * (`DELAYED`, at `nextDeliveryTime`), due and waiting for a free delivery slot (`DUE`), or held
   * by its flow-control key or queue (`WAITING`).
   */
  state?: 'ACTIVE' | 'DELAYED' | 'DUE' | 'WAITING';
  /** `DELAYED`: when it is due, Unix ms. */
  nextDeliveryTime?: number;
}

/** One line of the events log (`GET /v2/events`): a state transition of a message. */
export interface Event {
  time: number;
  messageId: string;
  state: EventState;
  url: string;
  method: HttpMethod;
  header: HeaderMap;
  /** The message body, base64. */
  body: string;
  error?: string;
  nextDeliveryTime?: number;
  responseStatus?: number;
  responseHeader?: HeaderMap;
  responseBody?: string;
  topicName?: string;
  endpointName?: string;
  scheduleId?: string;
  queueName?: string;
  label?: string;
  labels?: string[];
  maxRetries: number;
  retried: number;
}

/** A dead-letter queue entry: the failed message plus the last response. */
export interface DlqMessage extends Message {
  dlqId: string;
  /** When the message entered the DLQ (its last attempt failed), ms. `createdAt` is its publish. */
  dlqCreatedAt: number;
  /** Absent when the last attempt got no response (timeout, connection error). */
  responseStatus?: number;
  responseHeader?: HeaderMap;
  /** The last response body when it is valid UTF-8; otherwise `responseBodyBase64`. */
  responseBody?: string;
  responseBodyBase64?: string;
  /** Why the last attempt failed when there was no response (timeout, connection error). */
  error?: string;
}

/** The account's signing keys (`GET /v2/keys`); give both to a `Receiver`. */
export interface SigningKeys {
  current: string;
  next: string;
}

/** Result of a publish to a URL. */
export interface PublishedMessage {
  messageId: string;
  /** `true` when an earlier message had the same deduplication id; this one was not stored. */
  deduplicated: boolean;
}

/** One element of the result of a publish to a URL group: one per endpoint. */
export interface PublishedGroupMessage extends PublishedMessage {
  url: string;
}

/** A publish answers one result for a URL, an array (one per endpoint) for a URL group. */
export type PublishResult = PublishedMessage | PublishedGroupMessage[];

/** Flow-control settings sent as `<P>-Flow-Control-Key` and `<P>-Flow-Control-Value`. */
export interface FlowControlOptions {
  key: string;
  /** Maximum deliveries in flight for the key. */
  parallelism?: number;
  /** Maximum deliveries started per `period`. */
  rate?: number;
  /** Rate period: a duration (`'1m'`) or seconds; the server's default is 1 s. */
  period?: string | number;
}

/** A callback URL with its settings (`<P>-Callback-*` / `<P>-Failure-Callback-*`). */
export interface CallbackOptions {
  url: string;
  /** Headers sent to the callback URL. */
  headers?: Record<string, string>;
  method?: HttpMethod;
  timeout?: string | number;
  /** Retries of the callback itself; default: the message's. */
  retries?: number;
  retryDelay?: string;
  /** Wait before sending the callback: a duration or seconds. */
  delay?: string | number;
}

/** A publish request; every option maps to one `<P>-…` header. */
export interface PublishRequest {
  /** A URL (`https://…`, its own query string kept) or a URL-group name. */
  destination: string;
  body?: string | Uint8Array;
  contentType?: string;
  /** Headers for the destination; each is sent as `<P>-Forward-<name>`. */
  headers?: Record<string, string>;
  /** Method used toward the destination (default POST). */
  method?: HttpMethod;
  /** Delay before the first attempt: a duration (`'10s'`, `'1d2h'`) or seconds. */
  delay?: string | number;
  /** Earliest delivery, Unix seconds; wins over `delay`. */
  notBefore?: number;
  /** Retries after a failed attempt (total attempts = 1 + retries). */
  retries?: number;
  /** Retry-delay expression in ms over `retried`, e.g. `'1000 * pow(2, retried)'`. */
  retryDelay?: string;
  /** Delivery timeout: a duration (`'30s'`) or seconds; can only shorten the plan's. */
  timeout?: string | number;
  /** One label or several (sent comma-joined). */
  label?: string | string[];
  deduplicationId?: string;
  contentBasedDeduplication?: boolean;
  flowControl?: FlowControlOptions;
  /** Forward every header of this request to the destination without the forward prefix. */
  headerForward?: boolean;
  /**
   * Parts the API, events and DLQ show as `REDACTED:<sha256>` (the destination still gets
   * them): `'body'`, `'header'` (every header) or `'header[Name]'`.
   */
  redactFields?: string[];
  /** Called after every attempt with its result (`<P>-Callback`). */
  callback?: string | CallbackOptions;
  /** Called once retries are exhausted, with the DLQ id (`<P>-Failure-Callback`). */
  failureCallback?: string | CallbackOptions;
  /** Extra headers sent exactly as given, after (and overriding) the ones built above. */
  rawHeaders?: Record<string, string>;
}

/** {@link PublishRequest} whose body is any JSON value, sent as `application/json`. */
export type PublishJsonRequest = Omit<PublishRequest, 'body'> & { body?: unknown };

/** A filter value that may match several values (OR): sent as repeated query parameters. */
export type MultiValue = string | string[];

/** Filters of `DELETE /v2/messages` (AND across fields, OR within one). Dates are ms. */
export interface MessageFilter {
  messageIds?: string[];
  topicName?: MultiValue;
  queueName?: MultiValue;
  url?: MultiValue;
  host?: MultiValue;
  path?: MultiValue;
  label?: MultiValue;
  flowControlKey?: MultiValue;
  scheduleId?: MultiValue;
  callerIp?: MultiValue;
  fromDate?: number;
  toDate?: number;
  /** @deprecated Ignored by the server: a bulk cancel cancels every matching message. */
  count?: number;
}

/** Filters of `GET /v2/messages` (the same as the bulk cancel's, AND across fields). */
/** Filters of `GET /v2/messages`: the bulk cancel's, and the messages' state now. */
export type MessageListFilter = Omit<MessageFilter, 'count'> & {
  state?: NonNullable<Message['state']> | NonNullable<Message['state']>[];
};

/** Filters of `GET /v2/events`. Dates are ms. */
export interface EventFilter {
  messageId?: MultiValue;
  /** A state, or `IN_PROGRESS` for ACTIVE, RETRY or ERROR. */
  state?: EventState | 'IN_PROGRESS' | (EventState | 'IN_PROGRESS')[];
  url?: MultiValue;
  topicName?: MultiValue;
  scheduleId?: MultiValue;
  queueName?: MultiValue;
  label?: MultiValue;
  host?: MultiValue;
  path?: MultiValue;
  fromDate?: number;
  toDate?: number;
}

/** Filters of the DLQ endpoints. Dates are ms. */
export interface DlqFilter {
  messageId?: MultiValue;
  url?: MultiValue;
  topicName?: MultiValue;
  scheduleId?: MultiValue;
  queueName?: MultiValue;
  label?: MultiValue;
  flowControlKey?: MultiValue;
  responseStatus?: number | number[];
  callerIp?: MultiValue;
  fromDate?: number;
  toDate?: number;
}

/** A page request; `cursor` comes from the previous page's response. */
export interface PageRequest {
  cursor?: string;
  /** Page size (events ≤ 1000, DLQ ≤ 100). */
  count?: number;
}

/** Selects DLQ entries for a bulk call: by id, or by filter (one page per call, see `cursor`). */
export type DlqSelection = { dlqIds: string[] } | ({ filter: DlqFilter } & PageRequest);

export interface EventsPage {
  /** Absent on the last page. */
  cursor?: string;
  events: Event[];
}

export interface DlqPage {
  /** Absent on the last page. */
  cursor?: string;
  messages: DlqMessage[];
}

/** An endpoint of a URL group. */
export interface UrlGroupEndpoint {
  url: string;
  /** Unique within the group; sent to the endpoint as `<P>-Endpoint-Name`. */
  name?: string;
}

/** A URL group (`GET /v2/topics/{name}`). */
export interface UrlGroup {
  name: string;
  createdAt: number;
  updatedAt: number;
  endpoints: UrlGroupEndpoint[];
  /** Default headers applied to every publish to the group. */
  headers?: HeaderMap;
}

/** A batch entry: a publish, or with `queue` an enqueue into that queue. */
export type BatchRequest = PublishRequest & { queue?: string };

/** One element of a batch result: the entry's publish result (an array for a URL group). */
export type BatchResult = PublishResult;

/**
 * A schedule to create: a publish request (without the one-off `notBefore` and deduplication
 * options) plus its cron expression. Every tick publishes it anew; `delay` counts from the tick.
 */
export interface CreateScheduleRequest extends Omit<
  PublishRequest,
  'notBefore' | 'deduplicationId' | 'contentBasedDeduplication'
> {
  /** Five cron fields, optionally prefixed `CRON_TZ=<IANA zone> `; UTC otherwise. */
  cron: string;
  /** Your own id (letters, digits, `-`, `_`, `.`); creating again with it replaces the schedule. */
  scheduleId?: string;
  /** Enqueue each produced message into this queue. */
  queueName?: string;
}

/** A schedule as `GET /v2/schedules` shows it. Times are Unix ms; `delay`/`period`/`timeout` s. */
export interface Schedule {
  scheduleId: string;
  cron: string;
  destination: string;
  createdAt: number;
  method: HttpMethod;
  isPaused: boolean;
  header?: HeaderMap;
  /** The body as UTF-8 text; `bodyBase64` instead when it is not valid UTF-8. */
  body?: string;
  bodyBase64?: string;
  retries?: number;
  delay?: number;
  callback?: string;
  failureCallback?: string;
  callerIp?: string;
  queueName?: string;
  flowControlKey?: string;
  parallelism?: number;
  rate?: number;
  period?: number;
  retryDelayExpression?: string;
  timeout?: number;
  label?: string;
  labels?: string[];
  lastScheduleTime?: number;
  nextScheduleTime?: number;
  /** The messages of the last tick and their current state. */
  lastScheduleStates?: Record<string, EventState>;
}

/** Filters of the workflow logs and the workflow DLQ (OR within a field, AND across). */
export interface WorkflowFilter {
  workflowRunId?: string | string[];
  /** DLQ ids (`dlq_…`): when given, the other filters are ignored. */
  dlqId?: string | string[];
  workflowUrl?: string | string[];
  workflowCreatedAt?: number;
  state?: string | string[];
  label?: string | string[];
  callerIp?: string | string[];
  flowControlKey?: string | string[];
  failureFunctionState?: string | string[];
  fromDate?: number;
  toDate?: number;
}

/** A run as `GET /v2/workflows/logs` shows it (see docs/workflows.md). */
export interface WorkflowRun {
  workflowRunId: string;
  workflowUrl: string;
  workflowState: 'RUN_STARTED' | 'RUN_SUCCESS' | 'RUN_FAILED' | 'RUN_CANCELED';
  workflowRunCreatedAt: number;
  workflowRunCompletedAt?: number;
  workflowRunCallerIp: string;
  workflowRunResponse?: string;
  /**
   * The history (each step with the `retries`, `retryDelay` and `headers` it was delivered
   * with); a failed run in the DLQ ends with a `next` group holding its failed step, a running
   * run with one holding the steps it is at (`STEP_PROGRESS`, `STEP_RETRY`): its messages not
   * delivered yet, among them a `context.call` on its way (`callType: "toCallback"`, with
   * `stepName`, `stepType`, `callUrl`, `callMethod`, `callHeaders`, `callBody`), its response
   * coming back (`"fromCallback"`) and a wait's timeout (`stepType: "Wait"`).
   */
  steps: { type: 'sequential' | 'parallel' | 'next'; steps: Record<string, unknown>[] }[];
  label?: string;
  labels?: string[];
  flowControlKey?: string;
  dlqId?: string;
  resumedFrom?: { runId: string; kind: 'resume' | 'restart' };
}

/** A run in the workflow DLQ: the failed step message's fields plus the run's. */
export interface WorkflowDlqMessage extends Record<string, unknown> {
  dlqId: string;
  workflowRunId: string;
  workflowUrl: string;
  workflowCreatedAt: number;
  /** When the run entered the workflow DLQ (its step ran out of retries), ms. */
  dlqCreatedAt: number;
  failureFunctionState?: string;
  responseStatus?: number;
}

/** Which DLQ entries a bulk call acts on: ids, or a filter with its page. */
export type WorkflowDlqSelection =
  { dlqIds: string[] } | { filter: WorkflowFilter; cursor?: string; count?: number };

export interface ResumedRun {
  workflowRunId: string;
  workflowCreatedAt: number;
}
