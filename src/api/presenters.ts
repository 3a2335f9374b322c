/** The JSON shapes of API.md ("Object shapes") built from stored records. */
import { redactGroupDefaults, redactHeaders, redactedText } from '../core/redaction.js';
import type { DlqEntry, EventRecord, Message, UrlGroup } from '../core/types.js';

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

/** A message as the API shows it: redacted fields (`Svc-Redact-Fields`) as `REDACTED:<sha256>`. */
export function messageJson(message: Message): Record<string, unknown> {
  const { spec } = message;
  return {
    messageId: message.id,
    url: message.url,
    topicName: message.topicName,
    endpointName: message.endpointName,
    method: spec.method,
    header: redactHeaders(spec.headers, spec.redact),
    ...(spec.redact?.body
      ? { body: redactedText(message.body) }
      : textOrBase64(message.body, 'body', 'bodyBase64')),
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

export function eventJson(event: EventRecord): Record<string, unknown> {
  return {
    time: event.time,
    messageId: event.messageId,
    state: event.state,
    url: event.url,
    method: event.method,
    header: event.header ?? {},
    body: event.bodyRedacted ?? base64(event.body) ?? '',
    error: event.error,
    nextDeliveryTime: event.nextDeliveryTime,
    responseStatus: event.responseStatus,
    responseHeader: event.responseHeader,
    responseBody: base64(event.responseBody),
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
    ...messageJson(entry.message),
    dlqId: entry.dlqId,
    dlqCreatedAt: entry.createdAt,
    responseStatus: entry.responseStatus,
    responseHeader: entry.responseHeader,
    ...(entry.responseBody === undefined
      ? {}
      : textOrBase64(entry.responseBody, 'responseBody', 'responseBodyBase64')),
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
