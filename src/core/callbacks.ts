/**
 * Callbacks, pure: the JSON body a callback or failure callback receives (interface.md "Callback
 * body") and the message that carries it. A callback is a message of its own: own id, retries,
 * events and DLQ entry, signed like any delivery. It never has callbacks itself, so a failing
 * callback cannot start a loop.
 */
import { newMessageId } from './ids.js';
import type { AttemptResult } from './retry-timing.js';
import type { CallbackSpec, Message } from './types.js';

const base64 = (bytes: Uint8Array): string =>
  Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');

/**
 * The callback body for an attempt of `source`. `status` is the destination's status, or 0 with
 * `error` when there was no response (timeout, connection error). The response body is what the
 * delivery read, which the dispatcher caps at the plan's `max_message_size`; `body` and
 * `sourceBody` are base64; `notBefore` and `createdAt` are strings of Unix ms. A failure callback
 * adds `dlqId`.
 */
export function callbackBody(p: {
  source: Message;
  attempt: AttemptResult;
  dlqId?: string;
}): Record<string, unknown> {
  const { source, attempt } = p;
  const body: Record<string, unknown> =
    attempt.kind === 'response'
      ? { status: attempt.status, header: attempt.headers, body: base64(attempt.body) }
      : { status: 0, header: {}, body: '', error: attempt.error };
  Object.assign(body, {
    retried: source.retried,
    maxRetries: source.maxRetries,
    sourceMessageId: source.id,
    topicName: source.topicName,
    endpointName: source.endpointName,
    url: source.url,
    method: source.spec.method,
    sourceHeader: source.spec.headers,
    sourceBody: base64(source.body),
    notBefore: String(source.notBefore),
    createdAt: String(source.createdAt),
    scheduleId: source.scheduleId,
    callerIP: source.callerIp,
  });
  if (p.dlqId !== undefined) body.dlqId = p.dlqId;
  return body;
}

/**
 * The message that POSTs (or whatever `spec.method` says) `body` as JSON to the callback URL.
 * Retries default to the source's; a redacted source makes the callback's body redacted too,
 * since it carries the source's headers and body, and the callback's headers as the source's.
 */
export function callbackMessage(p: {
  source: Message;
  kind: 'callback' | 'failure-callback';
  spec: CallbackSpec;
  body: Record<string, unknown>;
  now: number;
}): Message {
  const { source, spec, now } = p;
  const notBefore = now + (spec.delayMs ?? 0);
  const message: Message = {
    id: newMessageId(now),
    accountId: source.accountId,
    url: spec.url,
    callerIp: source.callerIp,
    retried: 0,
    maxRetries: spec.retries ?? source.maxRetries,
    notBefore,
    createdAt: now,
    dueAt: notBefore,
    spec: {
      method: spec.method,
      headers: { 'Content-Type': ['application/json'], ...spec.headers },
      callbackOf: { kind: p.kind, sourceMessageId: source.id },
    },
    body: Buffer.from(JSON.stringify(p.body)),
  };
  if (spec.retryDelayExpression !== undefined) {
    message.spec.retryDelayExpression = spec.retryDelayExpression;
  }
  if (spec.timeoutMs !== undefined) message.spec.timeoutMs = spec.timeoutMs;
  // The body carries the source's headers and body; the callback's own headers (its
  // `<P>-Callback-Forward-*`) are covered as the source's headers are.
  const redact = source.spec.redact;
  if (redact) {
    message.spec.redact = redact.headers ? { body: true, headers: redact.headers } : { body: true };
  }
  // A `context.call`'s response goes back to its workflow run (see core/workflow.ts).
  const workflow = source.spec.workflow;
  if (workflow?.callType === 'toCallback' && p.kind === 'callback') {
    message.spec.workflow = { ...workflow, callType: 'fromCallback' };
  }
  // The source's queue slot passes to its callbacks: the queue's next message waits for them.
  const queue = source.queueName ?? source.spec.holdsQueue;
  if (queue !== undefined) message.spec.holdsQueue = queue;
  // A callback is one more delivery of its source's pass: a publish it makes counts from there.
  if (source.spec.hops !== undefined) message.spec.hops = source.spec.hops;
  return message;
}
