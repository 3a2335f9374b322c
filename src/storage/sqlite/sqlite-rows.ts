/**
 * Object → parameter mapping for the SQLite schema (`migrations/001_init.sql`). Rows are read
 * back by the shared mappers of `../sql/rows.ts`. SQL `NULL` for absent values; JSON columns are
 * TEXT; bodies are BLOBs.
 */
import type {
  Account,
  ClaimedMessage,
  DlqEntry,
  EventRecord,
  Message,
  MessageSpec,
} from '../../core/types.js';
import { joinLabels, urlParts } from '../sql/filter.js';
import { dlqMessageJson } from '../sql/rows.js';
import { sharedBodyId } from '../sql/bodies.js';

/** SQL NULL for an absent value (better-sqlite3 rejects `undefined` as a parameter). */
const orNull = <T>(value: T | undefined): T | null => (value === undefined ? null : value);

const json = (value: unknown): string | null =>
  value === undefined ? null : JSON.stringify(value);

/** A Uint8Array as better-sqlite3 binds it: a Buffer view over the same bytes (no copy). */
export const blob = (bytes: Uint8Array): Buffer =>
  Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);

const optionalBlob = (bytes: Uint8Array | undefined): Buffer | null =>
  bytes === undefined ? null : blob(bytes);

const EMPTY = Buffer.alloc(0);

/**
 * The `body` and `body_id` parameters of a row: inline bytes, or an empty body and the id of
 * the shared body (stored before the row, see sqlite-bodies.ts). `absent`: what an inline-less
 * row holds in `body` (empty for NOT NULL columns, NULL for events).
 */
function bodyColumns(
  bytes: Uint8Array | undefined,
  absent: Buffer | null,
): [Buffer | null, string | null] {
  if (bytes === undefined) return [null, null];
  const id = sharedBodyId(bytes);
  return id === undefined ? [blob(bytes), null] : [absent, id];
}

// ---- accounts -----------------------------------------------------------------------------

export const ACCOUNT_COLUMNS =
  'id, plan, password_hash, current_signing_key, next_signing_key, created_at, owner_id, ' +
  'region, budget, plan_changed_at, password_sealed';

export function accountParams(a: Account): unknown[] {
  return [
    a.id,
    a.plan,
    a.passwordHash,
    a.currentSigningKey,
    a.nextSigningKey,
    a.createdAt,
    orNull(a.ownerId),
    orNull(a.region),
    orNull(a.budget),
    orNull(a.planChangedAt),
    orNull(a.passwordSealed),
  ];
}

// ---- messages -----------------------------------------------------------------------------

export const MESSAGE_COLUMNS =
  'id, account_id, url, url_host, url_path, topic_name, endpoint_name, queue_name, schedule_id, ' +
  'labels, flow_control_key, caller_ip, retried, max_retries, not_before, created_at, due_at, ' +
  'lease_token, spec, body, body_id, workflow_run_id';

/**
 * What a claim reads of a message, in the order {@link claimedFromColumns} takes it: only the
 * columns a delivery needs, read as an array. better-sqlite3 spends more on building a row object
 * of every column than on the lookup itself, and the claim runs once per delivery.
 */
export const CLAIM_COLUMNS =
  'id, account_id, url, caller_ip, retried, max_retries, not_before, created_at, spec, body, ' +
  'topic_name, endpoint_name, queue_name, schedule_id, body_id';

/** A claimed message from a {@link CLAIM_COLUMNS} row (the same as `messageFromRow` gives). */
export function claimedFromColumns(
  values: unknown[],
  leaseUntil: number,
  leaseToken: string,
): ClaimedMessage {
  const [id, accountId, url, callerIp, retried, maxRetries, notBefore, createdAt, spec, body] =
    values as [string, string, string, string, number, number, number, number, string, Buffer];
  const message: ClaimedMessage = {
    id,
    accountId,
    url,
    callerIp,
    retried,
    maxRetries,
    notBefore,
    createdAt,
    dueAt: leaseUntil,
    spec: JSON.parse(spec) as MessageSpec,
    body,
    leaseToken,
  };
  const [topicName, endpointName, queueName, scheduleId] = values.slice(10) as (string | null)[];
  if (topicName !== null && topicName !== undefined) message.topicName = topicName;
  if (endpointName !== null && endpointName !== undefined) message.endpointName = endpointName;
  if (queueName !== null && queueName !== undefined) message.queueName = queueName;
  if (scheduleId !== null && scheduleId !== undefined) message.scheduleId = scheduleId;
  return message;
}

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
    ...bodyColumns(m.body, EMPTY),
    // Its workflow run, for the logs (migration 018); NULL for a plain message.
    orNull(m.spec.workflow?.runId),
  ];
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
  'response_body, body_redacted, body_id, active_at';

/** The insert parameters; `event.id` is ignored (the store assigns it). */
export function eventParams(e: EventRecord): unknown[] {
  const { host, path } = urlParts(e.url);
  const [body, bodyId] = bodyColumns(e.body, null);
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
    body,
    orNull(e.error),
    orNull(e.nextDeliveryTime),
    orNull(e.responseStatus),
    json(e.responseHeader),
    optionalBlob(e.responseBody),
    orNull(e.bodyRedacted),
    bodyId,
    orNull(e.activeAt),
  ];
}

// ---- dlq ----------------------------------------------------------------------------------

export const DLQ_COLUMNS =
  'dlq_id, account_id, message_id, created_at, expires_at, url, url_host, url_path, ' +
  'topic_name, queue_name, schedule_id, labels, flow_control_key, caller_ip, response_status, ' +
  'response_header, response_body, error, message, body, body_id';

export function dlqParams(d: DlqEntry): unknown[] {
  const m = d.message;
  const { host, path } = urlParts(m.url);
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
    dlqMessageJson(m),
    ...bodyColumns(m.body, EMPTY),
  ];
}
