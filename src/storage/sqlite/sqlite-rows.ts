/**
 * Row ↔ object mapping for the SQLite schema (`migrations/001_init.sql`). SQL `NULL` becomes an
 * absent property, never `null`; JSON columns are TEXT; bodies are BLOBs, read back as Buffers
 * (a Buffer is a Uint8Array).
 */
import type {
  Account,
  DlqEntry,
  EventRecord,
  EventState,
  HeaderMap,
  HttpMethod,
  Message,
  MessageSpec,
  PlanName,
} from '../../core/types.js';
import { joinLabels, splitLabels, urlParts } from '../sql/filter.js';

export interface AccountRow {
  id: string;
  plan: string;
  password_hash: string;
  current_signing_key: string;
  next_signing_key: string;
  created_at: number;
}

export interface MessageRow {
  id: string;
  account_id: string;
  url: string;
  topic_name: string | null;
  endpoint_name: string | null;
  queue_name: string | null;
  schedule_id: string | null;
  caller_ip: string;
  retried: number;
  max_retries: number;
  not_before: number;
  created_at: number;
  due_at: number;
  lease_token: string | null;
  spec: string;
  body: Buffer;
}

export interface EventRow {
  id: number;
  account_id: string;
  message_id: string;
  time: number;
  state: string;
  url: string;
  method: string;
  topic_name: string | null;
  endpoint_name: string | null;
  queue_name: string | null;
  schedule_id: string | null;
  labels: string | null;
  flow_control_key: string | null;
  caller_ip: string;
  retried: number;
  max_retries: number;
  /** The row's own header, or the CREATED event's (joined by the list query). */
  header: string | null;
  body: Buffer | null;
  error: string | null;
  next_delivery_time: number | null;
  response_status: number | null;
  response_header: string | null;
  response_body: Buffer | null;
}

export interface DlqRow {
  dlq_id: string;
  created_at: number;
  expires_at: number;
  response_status: number | null;
  response_header: string | null;
  response_body: Buffer | null;
  error: string | null;
  message: string;
  body: Buffer;
}

type Nullable<T> = T | null | undefined;

/** SQL NULL for an absent value (better-sqlite3 rejects `undefined` as a parameter). */
const orNull = <T>(value: T | undefined): T | null => (value === undefined ? null : value);

const json = (value: unknown): string | null =>
  value === undefined ? null : JSON.stringify(value);

/** A Uint8Array as better-sqlite3 binds it: a Buffer view over the same bytes (no copy). */
const blob = (bytes: Uint8Array): Buffer =>
  Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);

const optionalBlob = (bytes: Uint8Array | undefined): Buffer | null =>
  bytes === undefined ? null : blob(bytes);

/** Sets `target[key]` only when the column is not NULL, so NULL reads back as absent. */
function setPresent<T extends object, K extends keyof T>(
  target: T,
  key: K,
  value: Nullable<T[K]>,
): void {
  if (value !== null && value !== undefined) target[key] = value;
}

// ---- accounts -----------------------------------------------------------------------------

export const ACCOUNT_COLUMNS =
  'id, plan, password_hash, current_signing_key, next_signing_key, created_at';

export function accountParams(a: Account): unknown[] {
  return [a.id, a.plan, a.passwordHash, a.currentSigningKey, a.nextSigningKey, a.createdAt];
}

export function accountFromRow(row: AccountRow): Account {
  return {
    id: row.id,
    plan: row.plan as PlanName,
    passwordHash: row.password_hash,
    currentSigningKey: row.current_signing_key,
    nextSigningKey: row.next_signing_key,
    createdAt: row.created_at,
  };
}

// ---- messages -----------------------------------------------------------------------------

export const MESSAGE_COLUMNS =
  'id, account_id, url, url_host, url_path, topic_name, endpoint_name, queue_name, schedule_id, ' +
  'labels, flow_control_key, caller_ip, retried, max_retries, not_before, created_at, due_at, ' +
  'lease_token, spec, body';

export function messageParams(m: Message): unknown[] {
  const { host, path } = urlParts(m.url);
  return [
    m.id,
    m.accountId,
    m.url,
    host,
    path,
    orNull(m.topicName),
    orNull(m.endpointName),
    orNull(m.queueName),
    orNull(m.scheduleId),
    joinLabels(m.spec.labels),
    orNull(m.spec.flowControl?.key),
    m.callerIp,
    m.retried,
    m.maxRetries,
    m.notBefore,
    m.createdAt,
    m.dueAt,
    null, // lease_token: a new message is not leased
    JSON.stringify(m.spec),
    blob(m.body),
  ];
}

export function messageFromRow(row: MessageRow): Message {
  const message: Message = {
    id: row.id,
    accountId: row.account_id,
    url: row.url,
    callerIp: row.caller_ip,
    retried: row.retried,
    maxRetries: row.max_retries,
    notBefore: row.not_before,
    createdAt: row.created_at,
    dueAt: row.due_at,
    spec: JSON.parse(row.spec) as MessageSpec,
    body: row.body,
  };
  setPresent(message, 'topicName', row.topic_name);
  setPresent(message, 'endpointName', row.endpoint_name);
  setPresent(message, 'queueName', row.queue_name);
  setPresent(message, 'scheduleId', row.schedule_id);
  return message;
}

/** Orders messages oldest first, as bulk cancel returns them. */
export function byCreatedAt(a: Message, b: Message): number {
  return a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

// ---- events -------------------------------------------------------------------------------

export const EVENT_COLUMNS =
  'account_id, message_id, time, state, url, url_host, url_path, method, topic_name, ' +
  'endpoint_name, queue_name, schedule_id, labels, flow_control_key, caller_ip, retried, ' +
  'max_retries, header, body, error, next_delivery_time, response_status, response_header, ' +
  'response_body';

/** The insert parameters; `event.id` is ignored (the store assigns it). */
export function eventParams(e: EventRecord): unknown[] {
  const { host, path } = urlParts(e.url);
  return [
    e.accountId,
    e.messageId,
    e.time,
    e.state,
    e.url,
    host,
    path,
    e.method,
    orNull(e.topicName),
    orNull(e.endpointName),
    orNull(e.queueName),
    orNull(e.scheduleId),
    joinLabels(e.labels),
    orNull(e.flowControlKey),
    e.callerIp,
    e.retried,
    e.maxRetries,
    json(e.header),
    optionalBlob(e.body),
    orNull(e.error),
    orNull(e.nextDeliveryTime),
    orNull(e.responseStatus),
    json(e.responseHeader),
    optionalBlob(e.responseBody),
  ];
}

export function eventFromRow(row: EventRow): EventRecord {
  const event: EventRecord = {
    id: row.id,
    messageId: row.message_id,
    accountId: row.account_id,
    url: row.url,
    method: row.method as HttpMethod,
    callerIp: row.caller_ip,
    time: row.time,
    state: row.state as EventState,
    retried: row.retried,
    maxRetries: row.max_retries,
  };
  setPresent(event, 'topicName', row.topic_name);
  setPresent(event, 'endpointName', row.endpoint_name);
  setPresent(event, 'queueName', row.queue_name);
  setPresent(event, 'scheduleId', row.schedule_id);
  setPresent(event, 'labels', splitLabels(row.labels));
  setPresent(event, 'flowControlKey', row.flow_control_key);
  setPresent(event, 'header', parseHeaders(row.header));
  setPresent(event, 'body', row.body);
  setPresent(event, 'error', row.error);
  setPresent(event, 'nextDeliveryTime', row.next_delivery_time);
  setPresent(event, 'responseStatus', row.response_status);
  setPresent(event, 'responseHeader', parseHeaders(row.response_header));
  setPresent(event, 'responseBody', row.response_body);
  return event;
}

// ---- dlq ----------------------------------------------------------------------------------

export const DLQ_COLUMNS =
  'dlq_id, account_id, message_id, created_at, expires_at, url, url_host, url_path, ' +
  'topic_name, queue_name, schedule_id, labels, flow_control_key, caller_ip, response_status, ' +
  'response_header, response_body, error, message, body';

export function dlqParams(d: DlqEntry): unknown[] {
  const m = d.message;
  const { host, path } = urlParts(m.url);
  // The `message` column holds the Message without its body, which has its own BLOB column.
  const { body, ...withoutBody } = m;
  return [
    d.dlqId,
    m.accountId,
    m.id,
    d.createdAt,
    d.expiresAt,
    m.url,
    host,
    path,
    orNull(m.topicName),
    orNull(m.queueName),
    orNull(m.scheduleId),
    joinLabels(m.spec.labels),
    orNull(m.spec.flowControl?.key),
    m.callerIp,
    orNull(d.responseStatus),
    json(d.responseHeader),
    optionalBlob(d.responseBody),
    orNull(d.error),
    JSON.stringify(withoutBody),
    blob(body),
  ];
}

export function dlqFromRow(row: DlqRow): DlqEntry {
  const message = { ...(JSON.parse(row.message) as Omit<Message, 'body'>), body: row.body };
  const entry: DlqEntry = {
    dlqId: row.dlq_id,
    message,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
  };
  setPresent(entry, 'responseStatus', row.response_status);
  setPresent(entry, 'responseHeader', parseHeaders(row.response_header));
  setPresent(entry, 'responseBody', row.response_body);
  setPresent(entry, 'error', row.error);
  return entry;
}

function parseHeaders(text: string | null): HeaderMap | undefined {
  return text === null ? undefined : (JSON.parse(text) as HeaderMap);
}
