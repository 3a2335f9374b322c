/**
 * Row shapes of the schema (the same tables and columns in both SQL drivers) and their mapping
 * to domain objects. SQL NULL becomes an absent property, never `null`; JSON columns are TEXT;
 * bodies are BLOB/BYTEA, read back as Buffers (a Buffer is a Uint8Array).
 *
 * The dialects differ only in how 64-bit integers arrive: better-sqlite3 returns INTEGER as a
 * number, the `postgres` package returns BIGINT as a decimal string (not every int8 fits a JS
 * number; ours do: ms times until the year 275760). So those columns are `Int8` and the mappers
 * convert them with `Number()`.
 */
import type {
  Account,
  AccountRegion,
  DlqEntry,
  EventRecord,
  EventState,
  HeaderMap,
  HttpMethod,
  Message,
  MessageSpec,
  PlanName,
  UrlGroup,
  UrlGroupEndpoint,
} from '../../core/types.js';
import type { MessageState } from '../driver.js';
import { splitLabels } from './filter.js';

/** A 64-bit integer column: a number (SQLite) or a decimal string (PostgreSQL). */
export type Int8 = number | string;

export interface AccountRow {
  id: string;
  plan: string;
  password_hash: string;
  password_sealed: string | null;
  current_signing_key: string;
  next_signing_key: string;
  created_at: Int8;
  owner_id: string | null;
  region: string | null;
  budget: Int8 | null;
  plan_changed_at: Int8 | null;
}

export interface MessageRow {
  id: string;
  account_id: string;
  url: string;
  url_host: string;
  url_path: string;
  topic_name: string | null;
  endpoint_name: string | null;
  queue_name: string | null;
  schedule_id: string | null;
  labels: string | null;
  flow_control_key: string | null;
  caller_ip: string;
  retried: number;
  max_retries: number;
  not_before: Int8;
  created_at: Int8;
  due_at: Int8;
  lease_token: string | null;
  spec: string;
  body: Buffer;
  /** The shared body (migration 011) when the body is not inline; `body` is then empty. */
  body_id?: string | null;
  /** Set while the message waits in its gate's wait list (migration 005). */
  wait_due_at?: Int8 | null;
}

export interface EventRow {
  id: Int8;
  account_id: string;
  message_id: string;
  time: Int8;
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
  /** The shared body (migration 011) when the body is not inline; `body` is then NULL. */
  body_id?: string | null;
  /** Likewise. */
  body_redacted: string | null;
  error: string | null;
  next_delivery_time: Int8 | null;
  response_status: number | null;
  response_header: string | null;
  response_body: Buffer | null;
  /** The whole lengths of `body` and `response_body` when a list cut them (else absent). */
  body_size?: Int8 | null;
  response_body_size?: Int8 | null;
}

export interface UrlGroupRow {
  account_id: string;
  name: string;
  created_at: Int8;
  updated_at: Int8;
  /** `UrlGroupEndpoint[]` as JSON. */
  endpoints: string;
  headers: string | null;
}

export interface DlqRow {
  dlq_id: string;
  created_at: Int8;
  expires_at: Int8;
  response_status: number | null;
  response_header: string | null;
  response_body: Buffer | null;
  error: string | null;
  /** The Message as JSON, without its body (stored in `body`). */
  message: string;
  body: Buffer;
  /** The shared body (migration 011) when the body is not inline; `body` is then empty. */
  body_id?: string | null;
  /** The whole lengths of `body` and `response_body` when a list cut them (else absent). */
  body_size?: Int8 | null;
  response_body_size?: Int8 | null;
}

/**
 * The whole length of a body a list read cut, when it was cut (`size` is the stored length,
 * `bytes` what the list read); undefined when the body came whole.
 */
export function cutSize(
  bytes: Uint8Array | null,
  size: Int8 | null | undefined,
): number | undefined {
  if (size === null || size === undefined) return undefined;
  const whole = Number(size);
  return whole > (bytes?.byteLength ?? 0) ? whole : undefined;
}

/** Sets `target[key]` only when the column is not NULL, so NULL reads back as absent. */
function setPresent<T extends object, K extends keyof T>(
  target: T,
  key: K,
  value: T[K] | null | undefined,
): void {
  if (value !== null && value !== undefined) target[key] = value;
}

const parseHeaders = (text: string | null): HeaderMap | undefined =>
  text === null ? undefined : (JSON.parse(text) as HeaderMap);

export function accountFromRow(row: AccountRow): Account {
  const account: Account = {
    id: row.id,
    plan: row.plan as PlanName,
    passwordHash: row.password_hash,
    currentSigningKey: row.current_signing_key,
    nextSigningKey: row.next_signing_key,
    createdAt: Number(row.created_at),
  };
  setPresent(account, 'passwordSealed', row.password_sealed);
  setPresent(account, 'ownerId', row.owner_id);
  setPresent(account, 'region', row.region as AccountRegion | null);
  if (row.budget !== null) account.budget = Number(row.budget);
  if (row.plan_changed_at !== null) account.planChangedAt = Number(row.plan_changed_at);
  return account;
}

/**
 * Where a message row stands at `now` (see `MessageState`). `leasedUntil`: SQLite's lease of the
 * message, kept in memory (0 when it has none); PostgreSQL's is in the row, where a live lease
 * has a token and `due_at` is its expiry.
 */
export function messageStateOf(
  row: Pick<MessageRow, 'due_at' | 'lease_token' | 'wait_due_at'>,
  now: number,
  leasedUntil?: number,
): MessageState {
  if (row.wait_due_at != null) return 'waiting';
  const dueAt = Number(row.due_at);
  const leased =
    leasedUntil === undefined ? row.lease_token !== null && dueAt > now : leasedUntil > now;
  if (leased) return 'active';
  return dueAt > now ? 'delayed' : 'due';
}

export function messageFromRow(row: MessageRow): Message {
  const message: Message = {
    id: row.id,
    accountId: row.account_id,
    url: row.url,
    callerIp: row.caller_ip,
    retried: row.retried,
    maxRetries: row.max_retries,
    notBefore: Number(row.not_before),
    createdAt: Number(row.created_at),
    // A waiting message's due_at is the parked sentinel; its own due time is wait_due_at.
    dueAt: Number(row.wait_due_at ?? row.due_at),
    spec: JSON.parse(row.spec) as MessageSpec,
    body: row.body,
  };
  setPresent(message, 'topicName', row.topic_name);
  setPresent(message, 'endpointName', row.endpoint_name);
  setPresent(message, 'queueName', row.queue_name);
  setPresent(message, 'scheduleId', row.schedule_id);
  return message;
}

export function eventFromRow(row: EventRow): EventRecord {
  const event: EventRecord = {
    id: Number(row.id),
    messageId: row.message_id,
    accountId: row.account_id,
    url: row.url,
    method: row.method as HttpMethod,
    callerIp: row.caller_ip,
    time: Number(row.time),
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
  setPresent(event, 'bodyRedacted', row.body_redacted);
  setPresent(event, 'error', row.error);
  if (row.next_delivery_time !== null) event.nextDeliveryTime = Number(row.next_delivery_time);
  setPresent(event, 'responseStatus', row.response_status);
  setPresent(event, 'responseHeader', parseHeaders(row.response_header));
  setPresent(event, 'responseBody', row.response_body);
  setPresent(event, 'bodySize', cutSize(row.body, row.body_size));
  setPresent(event, 'responseBodySize', cutSize(row.response_body, row.response_body_size));
  return event;
}

export function dlqFromRow(row: DlqRow): DlqEntry {
  const message = { ...(JSON.parse(row.message) as Omit<Message, 'body'>), body: row.body };
  const entry: DlqEntry = {
    dlqId: row.dlq_id,
    message,
    createdAt: Number(row.created_at),
    expiresAt: Number(row.expires_at),
  };
  setPresent(entry, 'responseStatus', row.response_status);
  setPresent(entry, 'responseHeader', parseHeaders(row.response_header));
  setPresent(entry, 'responseBody', row.response_body);
  setPresent(entry, 'error', row.error);
  setPresent(entry, 'bodySize', cutSize(row.body, row.body_size));
  setPresent(entry, 'responseBodySize', cutSize(row.response_body, row.response_body_size));
  return entry;
}

/** The `message` column of a DLQ row: the Message as JSON, without its body (stored apart). */
export function dlqMessageJson(message: Message): string {
  return JSON.stringify({ ...message, body: undefined }); // JSON leaves undefined out
}

export function urlGroupFromRow(row: UrlGroupRow): UrlGroup {
  const group: UrlGroup = {
    accountId: row.account_id,
    name: row.name,
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
    endpoints: JSON.parse(row.endpoints) as UrlGroupEndpoint[],
  };
  setPresent(group, 'headers', parseHeaders(row.headers));
  return group;
}

/** The JSON columns of a URL group row: `[endpoints, headers or null]`. */
export function urlGroupJson(group: UrlGroup): [string, string | null] {
  return [
    JSON.stringify(group.endpoints),
    group.headers === undefined ? null : JSON.stringify(group.headers),
  ];
}
