/** Builders for the rows the engine writes besides messages: events and DLQ entries. */
import type { EventRecord, EventState, Message, MessageRef } from '../core/types.js';

export function messageRef(message: Message): MessageRef {
  return {
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
  };
}

/** An event of `message` in `state`; the CREATED event also stores the header and body. */
export function eventOf(
  message: Message,
  state: EventState,
  time: number,
  extra: Partial<EventRecord> = {},
): EventRecord {
  return {
    ...messageRef(message),
    time,
    state,
    retried: message.retried,
    maxRetries: message.maxRetries,
    ...(state === 'CREATED' ? { header: message.spec.headers, body: message.body } : {}),
    ...extra,
  };
}
