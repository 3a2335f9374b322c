/** Builders for the rows the engine writes besides messages: events and DLQ entries. */
import { redactHeaders, redactedText } from '../core/redaction.js';
import type { EventRecord, EventState, Message } from '../core/types.js';

/**
 * An event of `message` in `state`; the CREATED event also stores the header and body, redacted
 * as the message asks (the log never holds a redacted value). Built field by field (no object
 * spreads): it runs for every state change of every message.
 */
export function eventOf(
  message: Message,
  state: EventState,
  time: number,
  extra?: Partial<EventRecord>,
): EventRecord {
  const event: EventRecord = {
    messageId: message.id,
    accountId: message.accountId,
    url: message.url,
    method: message.spec.method,
    topicName: message.topicName,
    endpointName: message.endpointName,
    queueName: message.queueName,
    scheduleId: message.scheduleId,
    labels: message.spec.labels,
    flowControlKey: message.spec.flowControl?.key,
    callerIp: message.callerIp,
    time,
    state,
    retried: message.retried,
    maxRetries: message.maxRetries,
  };
  if (state === 'CREATED') {
    const redact = message.spec.redact;
    if (redact === undefined) {
      event.header = message.spec.headers;
      event.body = message.body;
    } else {
      event.header = redactHeaders(message.spec.headers, redact);
      if (redact.body) event.bodyRedacted = redactedText(message.body);
      else event.body = message.body;
    }
  }
  return extra ? Object.assign(event, extra) : event;
}
