/**
 * Events between workflow runs, pure: a run waits for an event (`context.waitForEvent`, the
 * SDK's `POST /v2/wait/{eventId}`), and a notify (`POST /v2/notify/{eventId}`) wakes every run
 * of the account waiting for it; a waiter not notified before its deadline resumes with a
 * timeout. See docs/workflows.md. No I/O.
 */
import { parseDuration } from './duration.js';
import { badRequest, limitExceeded } from './errors.js';
import { headerValueProblem, isValidHeaderName, quoteValue } from './headers.js';
import type { HeaderMap } from './types.js';
import { isJsonObject } from './json.js';

/** A run waiting for an event. Its id is the id of its timeout message. */
export interface WorkflowWaiter {
  accountId: string;
  eventId: string;
  /** The timeout message's id (a delayed step message to the workflow URL). */
  id: string;
  runId: string;
  /** The workflow URL the run resumes at. */
  url: string;
  /** When the wait times out, Unix ms. */
  deadline: number;
  createdAt: number;
  /** The SDK's wait step (`stepId`, `stepName`, `stepType`, `concurrent`, …), echoed back. */
  step: Record<string, unknown>;
  /** The headers the resuming delivery carries (the run's forwarded headers). */
  headers: HeaderMap;
  timeoutUrl?: string;
  timeoutHeaders?: HeaderMap;
}

/** Longest event id, characters (the id is a path segment chosen by the user). */
export const MAX_EVENT_ID_LENGTH = 256;

/**
 * Checks an event id from the path.
 *
 * @throws FerryError 400 when it is empty or longer than {@link MAX_EVENT_ID_LENGTH}.
 */
export function checkEventId(eventId: string): string {
  if (eventId.length === 0 || eventId.length > MAX_EVENT_ID_LENGTH) {
    throw badRequest(`invalid eventId ${quoteValue(eventId)}: 1-${MAX_EVENT_ID_LENGTH} characters`);
  }
  return eventId;
}

/** The body of `POST /v2/wait/{eventId}`, as the SDK sends it. */
export interface WaitRequest {
  url: string;
  timeoutMs: number;
  step: Record<string, unknown>;
  timeoutUrl?: string;
  timeoutHeaders?: HeaderMap;
}

function headerMapOf(value: unknown, field: string): HeaderMap {
  const fail = () => badRequest(`invalid ${field}: expected an object of string arrays`);
  if (!isJsonObject(value)) throw fail();
  const out: HeaderMap = {};
  for (const [name, values] of Object.entries(value)) {
    const list = Array.isArray(values) ? values : [values];
    if (!list.every((v) => typeof v === 'string')) throw fail();
    // Sent with the timeout's delivery: a name or value the HTTP client refuses would fail it
    // on every attempt.
    if (!isValidHeaderName(name))
      throw badRequest(`invalid ${field}: header name ${quoteValue(name)}`);
    for (const v of list) {
      const problem = headerValueProblem(v);
      if (problem !== undefined) {
        throw badRequest(`invalid ${field}.${name} ${quoteValue(v)}: ${problem}`);
      }
    }
    out[name] = list;
  }
  return out;
}

/**
 * Parses the wait request `{url, timeout, timeoutUrl, timeoutHeaders, step}`. `timeout` is a
 * duration (`"30s"`, `"7d"`) or a number of seconds, at most `maxTimeoutMs` (the plan's
 * `max_delay`).
 *
 * @throws FerryError 400 naming the field for a body that is not such an object; 412 for a
 *   timeout beyond `maxTimeoutMs`.
 */
export function parseWaitRequest(body: Uint8Array, maxTimeoutMs: number): WaitRequest {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(body).toString('utf8'));
  } catch {
    throw badRequest('invalid body: expected JSON {url, timeout, step}');
  }
  if (!isJsonObject(value)) throw badRequest('invalid body: expected JSON {url, timeout, step}');
  const { url, timeout, step, timeoutUrl, timeoutHeaders } = value;
  if (typeof url !== 'string' || !/^https?:\/\/./i.test(url) || !URL.canParse(url)) {
    throw badRequest(`invalid url ${quoteValue(String(url))}: expected an http(s) URL`);
  }
  if (!isJsonObject(step)) throw badRequest('invalid step: expected the wait step object');
  let timeoutMs: number;
  if (typeof timeout === 'number' && Number.isInteger(timeout) && timeout >= 0) {
    timeoutMs = timeout * 1000;
  } else if (typeof timeout === 'string') {
    timeoutMs = parseDuration(timeout, 'timeout');
  } else {
    throw badRequest(`invalid timeout ${quoteValue(String(timeout))}: expected a duration`);
  }
  if (timeoutMs > maxTimeoutMs) {
    throw limitExceeded(
      `timeout ${quoteValue(String(timeout))} is more than the plan's max_delay (${maxTimeoutMs / 1000} s)`,
    );
  }
  const out: WaitRequest = { url, timeoutMs, step };
  if (typeof timeoutUrl === 'string' && timeoutUrl !== '') out.timeoutUrl = timeoutUrl;
  if (timeoutHeaders !== undefined && timeoutHeaders !== null) {
    out.timeoutHeaders = headerMapOf(timeoutHeaders, 'timeoutHeaders');
  }
  return out;
}

/**
 * The step result a waiter's run resumes with: the wait step with `out` (the event data,
 * base64, which the SDK decodes) when notified, or `waitTimeout: true` and no `out` on timeout.
 */
export function waitResultBody(
  step: Record<string, unknown>,
  result: { eventData: Uint8Array } | { timeout: true },
): Uint8Array {
  const rest = { ...step };
  delete rest.out;
  delete rest.waitTimeout;
  const body =
    'eventData' in result
      ? { ...rest, out: Buffer.from(result.eventData).toString('base64'), waitTimeout: false }
      : { ...rest, waitTimeout: true };
  return Buffer.from(JSON.stringify(body));
}

/** A waiter as `GET /v2/waiters/{eventId}` and the notify answer show it (the SDK's `Waiter`). */
export function waiterJson(w: WorkflowWaiter): Record<string, unknown> {
  const out: Record<string, unknown> = {
    url: w.url,
    deadline: Math.floor(w.deadline / 1000),
    headers: w.headers,
  };
  if (w.timeoutUrl !== undefined) out.timeoutUrl = w.timeoutUrl;
  if (w.timeoutHeaders !== undefined) out.timeoutHeaders = w.timeoutHeaders;
  return out;
}
