/**
 * The stored message of a publish with parsed settings. Shared by the publish route and the
 * scheduler (each tick of a schedule is a publish with the schedule's settings at that time).
 */
import { newMessageId } from './ids.js';
import type { PublishSettings } from './publish-request.js';
import type { Account, Message, MessageSpec } from './types.js';

/** Builds the stored message of a publish to `url` with the parsed settings. */
export function buildMessage(p: {
  account: Account;
  url: string;
  settings: PublishSettings;
  body: Uint8Array;
  callerIp: string;
  now: number;
}): Message {
  const { settings, now } = p;
  return {
    id: newMessageId(now),
    accountId: p.account.id,
    url: p.url,
    callerIp: p.callerIp,
    retried: 0,
    maxRetries: settings.retries,
    notBefore: settings.notBefore,
    createdAt: now,
    dueAt: Math.max(settings.notBefore, now),
    spec: specOf(settings),
    body: p.body,
  };
}

/** The stored settings of a message (its `spec`) from a publish's parsed settings. */
export function specOf(settings: PublishSettings): MessageSpec {
  return {
    method: settings.method,
    headers: settings.headers,
    labels: settings.labels,
    retryDelayExpression: settings.retryDelayExpression,
    timeoutMs: settings.timeoutMs,
    flowControl: settings.flowControl,
    redact: settings.redact,
    callback: settings.callback,
    failureCallback: settings.failureCallback,
  };
}
