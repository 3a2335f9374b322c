import { headerGet } from './headers.js';
import type { DlqEntry, HeaderMap } from './types.js';

/**
 * What happens after a delivery attempt, as a pure function of the attempt's result, the retry
 * budget and the clock, so every branch (Retry-After, expression, default backoff, the 489
 * escape hatch) is tested without I/O. Rules: API.md "Delivery".
 */

const SECOND_MS = 1_000;
const DAY_MS = 86_400_000;

/** The result of one delivery attempt as the HTTP client saw it. */
export type AttemptResult =
  | { kind: 'response'; status: number; headers: HeaderMap; body: Uint8Array }
  /** No response at all: timeout, connection refused, DNS failure, TLS error, … */
  | { kind: 'error'; error: string };

/** What to do with the message after an attempt. */
export type Outcome =
  | { kind: 'delivered' }
  /** Try again at `dueAt` (Unix ms); `error` describes the failed attempt. */
  | { kind: 'retry'; dueAt: number; error: string }
  /** Final failure (to the DLQ); `nonRetryable` when the destination asked for it with a 489. */
  | { kind: 'failed'; error: string; nonRetryable: boolean };

export interface OutcomeParams {
  attempt: AttemptResult;
  /** Retries already done before this attempt (0 for the first attempt). */
  retried: number;
  /** Retries allowed after the first attempt. */
  maxRetries: number;
  /** The compiled `Svc-Retry-Delay` expression (ms), when the message has one. */
  retryDelay?: (retried: number) => number;
  /** Unix ms. */
  now: number;
  /** The header prefix (`Svc`, `Upstash`), for `<P>-NonRetryable-Error`. */
  prefix: string;
}

/**
 * Response headers that may name the next retry time. `Retry-After` is the standard one; the
 * `X-RateLimit-Reset*` forms are what rate-limited APIs send (OpenAI sends Go durations like
 * `6m0s`, one per limit) and QStash honours them too. When several are usable the longest wins:
 * retrying before every limit has reset would only fail again.
 */
const RETRY_AFTER_HEADERS = [
  'Retry-After',
  'X-RateLimit-Reset',
  'X-RateLimit-Reset-Requests',
  'X-RateLimit-Reset-Tokens',
] as const;

/** Longest body excerpt kept in an attempt's error text, in characters. */
const ERROR_BODY_CHARS = 200;

/**
 * Decides the outcome of a delivery attempt:
 * - a 2xx response → delivered;
 * - a 489 with `<P>-NonRetryable-Error: true` → failed at once (`nonRetryable`);
 * - `retried >= maxRetries` → failed;
 * - otherwise retry at `now + delay`, where delay is the response's `Retry-After` (or an
 *   `X-RateLimit-Reset*` header; the longest of those that parse) when it is at most one day;
 *   else the `retryDelay` expression for `retried` when its result is finite (negative → 0,
 *   capped at one day: the plan's `max_delay` is not known here and a retry more than a day out
 *   is never what a formula meant); else {@link defaultBackoffMs}`(retried + 1)`.
 */
export function decideOutcome(p: OutcomeParams): Outcome {
  const { attempt } = p;
  if (attempt.kind === 'response' && attempt.status >= 200 && attempt.status < 300) {
    return { kind: 'delivered' };
  }
  const error = describeAttempt(attempt);
  if (
    attempt.kind === 'response' &&
    attempt.status === 489 &&
    headerGet(attempt.headers, `${p.prefix}-NonRetryable-Error`)?.trim().toLowerCase() === 'true'
  ) {
    return { kind: 'failed', error, nonRetryable: true };
  }
  if (p.retried >= p.maxRetries) return { kind: 'failed', error, nonRetryable: false };

  const delay =
    (attempt.kind === 'response' ? retryAfterMs(attempt.headers, p.now) : undefined) ??
    expressionDelayMs(p.retryDelay, p.retried) ??
    defaultBackoffMs(p.retried + 1);
  return { kind: 'retry', dueAt: p.now + delay, error };
}

/**
 * The default backoff before retry number `retryNumber` (1 for the first retry):
 * `min(86400, e^(2.5·n))` seconds, returned in milliseconds, rounded. 12 s, 2 min 28 s,
 * 30 min 8 s, 6 h 7 min, then one day.
 */
export function defaultBackoffMs(retryNumber: number): number {
  return Math.round(Math.min(86_400, Math.exp(2.5 * retryNumber)) * SECOND_MS);
}

/**
 * Parses a `Retry-After`-style header into a delay in ms from `now` (Unix ms). Accepts delay
 * seconds (`120`, decimals allowed), an HTTP date (IMF-fixdate, RFC 850 or asctime, read as
 * UTC), or a Go duration (`6m5s`, `1.5s`, `250ms`; units ns us µs ms s m h). Returns
 * `undefined` when the value does not parse or is negative; 0 ("retry now") is allowed. A date in
 * the past gives 0: the server's clock says the wait is over, and clock skew should not turn
 * "retry now" into a long default backoff. Fractions of a millisecond round up.
 */
export function parseRetryAfter(value: string, now: number): number | undefined {
  const s = value.trim();
  if (s === '') return undefined;
  if (/^\d+(\.\d+)?$/.test(s)) return finiteMs(Number(s) * SECOND_MS);
  if (/^[+\-\d.]/.test(s)) return parseGoDuration(s);
  return parseHttpDate(s, now);
}

/** Go `time.Duration` unit → ms. Both spellings of micro (U+00B5, U+03BC), as Go accepts. */
const GO_UNIT_MS: ReadonlyMap<string, number> = new Map([
  ['ns', 1e-6],
  ['us', 1e-3],
  ['\u00b5s', 1e-3],
  ['\u03bcs', 1e-3],
  ['ms', 1],
  ['s', 1_000],
  ['m', 60_000],
  ['h', 3_600_000],
]);

/** Go's `time.ParseDuration` syntax; `undefined` for anything else or a negative duration. */
function parseGoDuration(s: string): number | undefined {
  // One sign at most, as in Go (a recursive strip overflowed the stack on a destination's
  // `Retry-After: ------…`).
  const negative = s.startsWith('-');
  const rest = negative || s.startsWith('+') ? s.slice(1) : s;
  if (negative) {
    // "-0s" is zero in Go; any other negative is not a usable delay.
    return !/^[+-]/.test(rest) && parseGoDuration(rest) === 0 ? 0 : undefined;
  }
  if (rest === '0') return 0;
  const group = /(\d+(?:\.\d*)?|\.\d+)(ns|us|\u00b5s|\u03bcs|ms|h|m|s)/y;
  let total = 0;
  let pos = 0;
  if (rest === '') return undefined;
  while (pos < rest.length) {
    group.lastIndex = pos;
    const match = group.exec(rest);
    if (!match) return undefined;
    const [, amount = '', unit = ''] = match;
    total += Number(amount) * (GO_UNIT_MS.get(unit) ?? Number.NaN);
    pos = group.lastIndex;
  }
  return finiteMs(total);
}

const MONTH = '(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)';
const HTTP_DATE_FORMATS = [
  // IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT
  new RegExp(`^[A-Z][a-z]{2}, \\d{2} ${MONTH} \\d{4} \\d{2}:\\d{2}:\\d{2} GMT$`),
  // RFC 850: Sunday, 06-Nov-94 08:49:37 GMT
  new RegExp(`^[A-Z][a-z]+, \\d{2}-${MONTH}-\\d{2} \\d{2}:\\d{2}:\\d{2} GMT$`),
  // asctime: Sun Nov  6 08:49:37 1994
  new RegExp(`^[A-Z][a-z]{2} ${MONTH} [ \\d]\\d \\d{2}:\\d{2}:\\d{2} \\d{4}$`),
];

/**
 * The three HTTP-date forms of RFC 9110 §5.6.7. The shape is checked first because `Date.parse`
 * alone accepts almost anything (`"1"` is the year 2001).
 */
function parseHttpDate(s: string, now: number): number | undefined {
  const format = HTTP_DATE_FORMATS.findIndex((re) => re.test(s));
  if (format === -1) return undefined;
  // asctime carries no zone; it is UTC by definition, and Date.parse would read local time.
  const time = Date.parse(format === 2 ? `${s} GMT` : s);
  if (Number.isNaN(time)) return undefined;
  return Math.max(0, time - now);
}

function finiteMs(ms: number): number | undefined {
  return Number.isFinite(ms) && ms >= 0 ? Math.ceil(ms) : undefined;
}

/** The longest usable delay among the retry-after headers, if any is at most a day. */
function retryAfterMs(headers: HeaderMap, now: number): number | undefined {
  let best: number | undefined;
  for (const name of RETRY_AFTER_HEADERS) {
    const value = headerGet(headers, name);
    if (value === undefined) continue;
    const ms = parseRetryAfter(value, now);
    if (ms !== undefined && ms <= DAY_MS && (best === undefined || ms > best)) best = ms;
  }
  return best;
}

function expressionDelayMs(
  retryDelay: ((retried: number) => number) | undefined,
  retried: number,
): number | undefined {
  if (!retryDelay) return undefined;
  const ms = retryDelay(retried);
  if (!Number.isFinite(ms)) return undefined;
  return Math.min(DAY_MS, Math.max(0, Math.ceil(ms)));
}

/** The last attempt of a DLQ entry: its response when it had one, else why it had none. */
export function lastAttemptOf(
  entry: Pick<DlqEntry, 'responseStatus' | 'responseHeader' | 'responseBody' | 'error'>,
): AttemptResult {
  return entry.responseStatus !== undefined
    ? {
        kind: 'response',
        status: entry.responseStatus,
        headers: entry.responseHeader ?? {},
        body: entry.responseBody ?? new Uint8Array(0),
      }
    : { kind: 'error', error: entry.error ?? 'failed' };
}

/**
 * The `error` text recorded for a failed attempt: `HTTP <status>`, plus up to 200 characters of
 * the body (whitespace collapsed) when it is printable UTF-8 text; or the client's error text.
 */
export function describeAttempt(attempt: AttemptResult): string {
  if (attempt.kind === 'error') return attempt.error;
  const excerpt = bodyExcerpt(attempt.body);
  return excerpt ? `HTTP ${attempt.status}: ${excerpt}` : `HTTP ${attempt.status}`;
}

function bodyExcerpt(body: Uint8Array): string | undefined {
  // 4 bytes per character at most, so this many bytes always hold ERROR_BODY_CHARS characters;
  // `stream: true` keeps a character cut at the end from counting as invalid UTF-8.
  const head = body.subarray(0, ERROR_BODY_CHARS * 4);
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(head, { stream: true });
  } catch {
    return undefined;
  }
  // Control characters other than whitespace mean binary data, not a message for a human.
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u0008\u000b\u000e-\u001f\u007f]/.test(text)) return undefined;
  const chars = [...text.replace(/\s+/g, ' ').trim()];
  if (chars.length === 0) return undefined;
  const cut = chars.length > ERROR_BODY_CHARS || head.length < body.length;
  return cut ? `${chars.slice(0, ERROR_BODY_CHARS).join('')}…` : chars.join('');
}
