/** The JSON shapes of API.md ("Object shapes") built from stored records. */
import { redactGroupDefaults, redactHeaders, redactedText } from '../core/redaction.js';
import type { DlqEntry, EventRecord, Message, UrlGroup } from '../core/types.js';
import type { MessageState } from '../storage/driver.js';

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** `{body}` when the bytes are valid UTF-8, else `{bodyBase64}`, under the given key names. */
export function textOrBase64(
  bytes: Uint8Array,
  textKey: string,
  base64Key: string,
): Record<string, string> {
  try {
    return { [textKey]: utf8.decode(bytes) };
  } catch {
    return { [base64Key]: Buffer.from(bytes).toString('base64') };
  }
}

const base64 = (bytes: Uint8Array | undefined): string | undefined =>
  bytes === undefined ? undefined : Buffer.from(bytes).toString('base64');

/**
 * Drops the last character's bytes when a cut left it incomplete, so a cut UTF-8 text still
 * shows as text. Hand-written: TextDecoder can only replace such bytes with U+FFFD.
 */
export function trimCutUtf8(bytes: Uint8Array): Uint8Array {
  for (let back = 1; back <= Math.min(3, bytes.length); back++) {
    const byte = bytes[bytes.length - back] as number;
    if ((byte & 0xc0) !== 0x80) {
      // A lead byte: 110xxxxx starts 2 bytes, 1110xxxx 3, 11110xxx 4; an ASCII byte is whole.
      const length = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc0 ? 2 : 1;
      return length > back ? bytes.subarray(0, bytes.length - back) : bytes;
    }
  }
  return bytes;
}

/**
 * `{<key>Truncated: true, <key>Size}` when a list cut the body (its whole size in bytes), so a
 * client knows to fetch the item for the whole body; nothing when it came whole.
 */
export function cutFields(key: string, size: number | undefined): Record<string, unknown> {
  return size === undefined ? {} : { [`${key}Truncated`]: true, [`${key}Size`]: size };
}

/** A message's `state` in the API (see `MessageState`): upper case, as the events' states. */
export const STATE_NAMES: Record<MessageState, string> = {
  active: 'ACTIVE',
  delayed: 'DELAYED',
  due: 'DUE',
  waiting: 'WAITING',
};

/**
 * Where a message stands, for `GET /v2/messages[/{id}]`: its `state`, and for a delayed one the
 * time it is due (`nextDeliveryTime`, as storage holds it: after any move by flow control or a
 * paced destination).
 */
export function messageStateJson(message: Message, state: MessageState): Record<string, unknown> {
  return state === 'delayed'
    ? { state: STATE_NAMES[state], nextDeliveryTime: message.dueAt }
    : { state: STATE_NAMES[state] };
}

/**
 * A message as the API shows it: redacted fields (`Svc-Redact-Fields`) as `REDACTED:<sha256>`.
 * `bodySize` is set when a list cut the body (then redaction hashes only what was read, so a
 * list shows no hash: `REDACTED`).
 */
export function messageJson(message: Message, bodySize?: number): Record<string, unknown> {
  const { spec } = message;
  return {
    messageId: message.id,
    url: message.url,
    topicName: message.topicName,
    endpointName: message.endpointName,
    method: spec.method,
    header: redactHeaders(spec.headers, spec.redact),
    ...bodyFields(message, bodySize),
    maxRetries: message.maxRetries,
    retried: message.retried,
    notBefore: message.notBefore,
    createdAt: message.createdAt,
    callback: spec.callback?.url,
    failureCallback: spec.failureCallback?.url,
    queueName: message.queueName,
    scheduleId: message.scheduleId,
    callerIP: message.callerIp,
    label: spec.labels?.[0],
    labels: spec.labels,
    flowControlKey: spec.flowControl?.key,
    parallelism: spec.flowControl?.parallelism,
    rate: spec.flowControl?.rate,
    period: spec.flowControl ? (spec.flowControl.periodSec ?? 1) : undefined,
    retryDelayExpression: spec.retryDelayExpression,
    timeout: spec.timeoutMs === undefined ? undefined : Math.ceil(spec.timeoutMs / 1000),
  };
}

/** A message's body fields: as text or base64, redacted, or cut by a list. */
function bodyFields(message: Message, bodySize: number | undefined): Record<string, unknown> {
  if (message.spec.redact?.body) {
    // A cut body cannot be hashed whole: the list shows no hash, the item's GET does.
    if (bodySize === undefined) return { body: redactedText(message.body) };
    return { body: 'REDACTED', ...cutFields('body', bodySize) };
  }
  if (bodySize === undefined) return textOrBase64(message.body, 'body', 'bodyBase64');
  return {
    ...textOrBase64(trimCutUtf8(message.body), 'body', 'bodyBase64'),
    ...cutFields('body', bodySize),
  };
}

export function eventJson(event: EventRecord): Record<string, unknown> {
  return {
    time: event.time,
    messageId: event.messageId,
    state: event.state,
    url: event.url,
    method: event.method,
    header: event.header ?? {},
    body: event.bodyRedacted ?? base64(event.body) ?? '',
    ...cutFields('body', event.bodyRedacted === undefined ? event.bodySize : undefined),
    error: event.error,
    nextDeliveryTime: event.nextDeliveryTime,
    responseStatus: event.responseStatus,
    responseHeader: event.responseHeader,
    responseBody: base64(event.responseBody),
    ...cutFields('responseBody', event.responseBodySize),
    topicName: event.topicName,
    endpointName: event.endpointName,
    scheduleId: event.scheduleId,
    queueName: event.queueName,
    label: event.labels?.[0],
    labels: event.labels,
    flowControlKey: event.flowControlKey,
    callerIP: event.callerIp,
    maxRetries: event.maxRetries,
    retried: event.retried,
  };
}

export function dlqJson(entry: DlqEntry): Record<string, unknown> {
  return {
    ...messageJson(entry.message, entry.bodySize),
    dlqId: entry.dlqId,
    dlqCreatedAt: entry.createdAt,
    responseStatus: entry.responseStatus,
    responseHeader: entry.responseHeader,
    ...(entry.responseBody === undefined
      ? {}
      : textOrBase64(
          entry.responseBodySize === undefined
            ? entry.responseBody
            : trimCutUtf8(entry.responseBody),
          'responseBody',
          'responseBodyBase64',
        )),
    ...cutFields('responseBody', entry.responseBodySize),
    error: entry.error,
  };
}

/**
 * A URL group; its default headers redacted as their own `<P>-Redact-Fields` asks
 * (`redactGroupDefaults`). `prefix` is the header prefix (`Svc`).
 */
export function urlGroupJson(group: UrlGroup, prefix: string): Record<string, unknown> {
  return {
    name: group.name,
    createdAt: group.createdAt,
    updatedAt: group.updatedAt,
    endpoints: group.endpoints.map((e) => (e.name === undefined ? { url: e.url } : { ...e })),
    headers: group.headers && redactGroupDefaults(group.headers, prefix),
  };
}
