/**
 * Row shapes as the `postgres` package returns them, and their mapping to domain objects.
 *
 * Unlike better-sqlite3, which returns INTEGER columns as numbers, the `postgres` package returns
 * BIGINT (our ms times and the events id) as strings, since not every int8 fits a JS number;
 * ours do (ms times until the year 275760), so mappers convert with `Number()`. INTEGER columns
 * arrive as numbers, BYTEA as Buffer. NULL columns become absent properties, never `null`.
 */
import type postgres from 'postgres';
import type {
  Account,
  ClaimedMessage,
  DlqEntry,
  EventRecord,
  EventState,
  HeaderMap,
  HttpMethod,
  Message,
  MessageSpec,
  PlanName,
} from '../../core/types.js';
import { splitLabels } from '../sql/filter.js';

/** Either the pool or a transaction (or savepoint) connection: both run the same queries. */
export type Db = postgres.Sql | postgres.TransactionSql;

/** The `bytea` type oid: `sql.array(buffers, BYTEA_OID)` binds a `bytea[]` parameter. */
export const BYTEA_OID = 17;

/** A BIGINT as the package returns it (a decimal string). */
type Int8 = string;

export interface AccountRow {
  id: string;
  plan: string;
  password_hash: string;
  current_signing_key: string;
  next_signing_key: string;
  created_at: Int8;
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
  header: string | null;
  body: Buffer | null;
  error: string | null;
  next_delivery_time: Int8 | null;
  response_status: number | null;
  response_header: string | null;
  response_body: Buffer | null;
}

export interface DlqRow {
  dlq_id: string;
  created_at: Int8;
  expires_at: Int8;
  response_status: number | null;
  response_header: string | null;
  response_body: Buffer | null;
  error: string | null;
  /** JSON of the Message without its body. */
  message: string;
  body: Buffer;
}

/** `null` → `undefined`, so optional properties are left out rather than set to null. */
function opt<T>(value: T | null): T | undefined {
  return value === null ? undefined : value;
}

function optNumber(value: Int8 | number | null): number | undefined {
  return value === null ? undefined : Number(value);
}

function optJson<T>(value: string | null): T | undefined {
  return value === null ? undefined : (JSON.parse(value) as T);
}

/** Drops properties whose value is undefined, so "absent" really is absent. */
function compact<T extends object>(value: T): T {
  for (const key of Object.keys(value) as (keyof T)[]) {
    if (value[key] === undefined) delete value[key];
  }
  return value;
}

export function toAccount(row: AccountRow): Account {
  return {
    id: row.id,
    plan: row.plan as PlanName,
    passwordHash: row.password_hash,
    currentSigningKey: row.current_signing_key,
    nextSigningKey: row.next_signing_key,
    createdAt: Number(row.created_at),
  };
}

export function toMessage(row: MessageRow): Message {
  return compact<Message>({
    id: row.id,
    accountId: row.account_id,
    url: row.url,
    topicName: opt(row.topic_name),
    endpointName: opt(row.endpoint_name),
    queueName: opt(row.queue_name),
    scheduleId: opt(row.schedule_id),
    callerIp: row.caller_ip,
    retried: row.retried,
    maxRetries: row.max_retries,
    notBefore: Number(row.not_before),
    createdAt: Number(row.created_at),
    dueAt: Number(row.due_at),
    spec: JSON.parse(row.spec) as MessageSpec,
    body: row.body,
  });
}

export function toClaimedMessage(row: MessageRow): ClaimedMessage {
  if (row.lease_token === null) throw new Error(`claimed message ${row.id} has no lease token`);
  return { ...toMessage(row), leaseToken: row.lease_token };
}

export function toEvent(row: EventRow): EventRecord {
  return compact<EventRecord>({
    id: Number(row.id),
    messageId: row.message_id,
    accountId: row.account_id,
    url: row.url,
    method: row.method as HttpMethod,
    topicName: opt(row.topic_name),
    endpointName: opt(row.endpoint_name),
    queueName: opt(row.queue_name),
    scheduleId: opt(row.schedule_id),
    labels: splitLabels(row.labels),
    flowControlKey: opt(row.flow_control_key),
    callerIp: row.caller_ip,
    time: Number(row.time),
    state: row.state as EventState,
    retried: row.retried,
    maxRetries: row.max_retries,
    header: optJson<HeaderMap>(row.header),
    body: opt(row.body),
    error: opt(row.error),
    nextDeliveryTime: optNumber(row.next_delivery_time),
    responseStatus: opt(row.response_status),
    responseHeader: optJson<HeaderMap>(row.response_header),
    responseBody: opt(row.response_body),
  });
}

export function toDlqEntry(row: DlqRow): DlqEntry {
  const message = JSON.parse(row.message) as Omit<Message, 'body'>;
  return compact<DlqEntry>({
    dlqId: row.dlq_id,
    message: { ...message, body: row.body },
    createdAt: Number(row.created_at),
    expiresAt: Number(row.expires_at),
    responseStatus: opt(row.response_status),
    responseHeader: optJson<HeaderMap>(row.response_header),
    responseBody: opt(row.response_body),
    error: opt(row.error),
  });
}

/** The `message` column of a DLQ row: the Message as JSON, without its body (stored apart). */
export function dlqMessageJson(message: Message): string {
  return JSON.stringify({ ...message, body: undefined }); // JSON leaves undefined out
}
