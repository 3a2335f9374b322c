import { describe, expect, it } from 'vitest';
import { compileRetryDelay } from './retry-delay.js';
import {
  decideOutcome,
  defaultBackoffMs,
  describeAttempt,
  parseRetryAfter,
  type AttemptResult,
  type Outcome,
  type OutcomeParams,
} from './retry-timing.js';
import type { HeaderMap } from './types.js';

const NOW = Date.UTC(2026, 0, 1, 12, 0, 0);
const DAY = 86_400_000;
const text = (s: string) => new TextEncoder().encode(s);

function response(status: number, headers: HeaderMap = {}, body = ''): AttemptResult {
  return { kind: 'response', status, headers, body: text(body) };
}

describe('defaultBackoffMs', () => {
  it.each<[number, number]>([
    [1, 12_182], // e^2.5 s ≈ 12 s
    [2, 148_413], // 2 min 28 s
    [3, 1_808_042], // 30 min 8 s
    [4, 22_026_466], // 6 h 7 min 6 s
    [5, DAY], // capped at one day
    [20, DAY],
  ])('retry %d → %d ms', (n, ms) => {
    expect(defaultBackoffMs(n)).toBe(ms);
  });
});

describe('parseRetryAfter', () => {
  it.each<[string, number | undefined]>([
    ['120', 120_000],
    [' 5 ', 5_000],
    ['0', 0],
    ['1.5', 1_500],
    ['Thu, 01 Jan 2026 12:02:00 GMT', 120_000], // IMF-fixdate
    ['Thursday, 01-Jan-26 12:00:30 GMT', 30_000], // RFC 850
    ['Thu Jan  1 12:00:10 2026', 10_000], // asctime, read as UTC
    ['Thu, 01 Jan 2026 11:00:00 GMT', 0], // in the past: retry now
    ['6m5s', 365_000], // Go durations
    ['1h', 3_600_000],
    ['1.5s', 1_500],
    ['250ms', 250],
    ['1500us', 2], // rounded up to whole ms
    ['1500\u00b5s', 2],
    ['1500\u03bcs', 2],
    ['100ns', 1],
    ['1h2m3s4ms', 3_723_004],
    ['+5s', 5_000],
    ['0s', 0],
    ['-0s', 0],
    ['-5', undefined],
    ['-5s', undefined],
    ['', undefined],
    ['soon', undefined],
    ['1', 1_000], // not the year 2001, as Date.parse would have it
    ['5x', undefined],
    ['5 s', undefined],
    ['2026-01-01T12:02:00Z', undefined], // not an HTTP date
    ['Thu, 01 Jan 2026 12:02:00 PST', undefined],
    ['1e3', undefined],
    ['--0s', undefined],
    ['+-5s', undefined],
    ['-'.repeat(100_000), undefined], // once a stack overflow in the delivery engine
  ])('%j → %s', (value, ms) => {
    expect(parseRetryAfter(value, NOW)).toBe(ms);
  });
});

describe('decideOutcome', () => {
  const base: OutcomeParams = {
    attempt: response(500),
    retried: 0,
    maxRetries: 3,
    now: NOW,
    prefix: 'Svc',
  };
  const expr = (source: string) => compileRetryDelay(source, 'Svc-Retry-Delay');

  it.each<[string, Partial<OutcomeParams>, Outcome]>([
    ['200 is delivered', { attempt: response(200) }, { kind: 'delivered' }],
    ['204 is delivered', { attempt: response(204) }, { kind: 'delivered' }],
    ['299 is delivered', { attempt: response(299) }, { kind: 'delivered' }],
    [
      '2xx is delivered even with retries used up',
      { attempt: response(201), retried: 3 },
      { kind: 'delivered' },
    ],
    [
      '300 is a failed attempt',
      { attempt: response(300) },
      { kind: 'retry', dueAt: NOW + 12_182, error: 'HTTP 300' },
    ],
    [
      '500, first retry: default backoff n=1',
      {},
      { kind: 'retry', dueAt: NOW + 12_182, error: 'HTTP 500' },
    ],
    [
      'third retry: default backoff n=3',
      { retried: 2 },
      { kind: 'retry', dueAt: NOW + 1_808_042, error: 'HTTP 500' },
    ],
    [
      'connection error is retried',
      { attempt: { kind: 'error', error: 'connect ECONNREFUSED 10.0.0.1:80' } },
      { kind: 'retry', dueAt: NOW + 12_182, error: 'connect ECONNREFUSED 10.0.0.1:80' },
    ],
    [
      'retries exhausted',
      { retried: 3 },
      { kind: 'failed', error: 'HTTP 500', nonRetryable: false },
    ],
    [
      'no retries at all',
      { maxRetries: 0, attempt: { kind: 'error', error: 'timeout after 900000 ms' } },
      { kind: 'failed', error: 'timeout after 900000 ms', nonRetryable: false },
    ],
    [
      '489 + NonRetryable-Error fails at once',
      { attempt: response(489, { 'Svc-Nonretryable-Error': ['true'] }, 'bad input') },
      { kind: 'failed', error: 'HTTP 489: bad input', nonRetryable: true },
    ],
    [
      '489 header looked up case-insensitively, value too',
      { attempt: response(489, { 'svc-NonRetryable-error': [' TRUE '] }) },
      { kind: 'failed', error: 'HTTP 489', nonRetryable: true },
    ],
    [
      '489 with the other dialect prefix',
      { prefix: 'Upstash', attempt: response(489, { 'Upstash-Nonretryable-Error': ['true'] }) },
      { kind: 'failed', error: 'HTTP 489', nonRetryable: true },
    ],
    [
      '489 with a foreign prefix is an ordinary failure',
      { attempt: response(489, { 'Upstash-Nonretryable-Error': ['true'] }) },
      { kind: 'retry', dueAt: NOW + 12_182, error: 'HTTP 489' },
    ],
    [
      '489 without the header is an ordinary failure',
      { attempt: response(489) },
      { kind: 'retry', dueAt: NOW + 12_182, error: 'HTTP 489' },
    ],
    [
      '489 with the header set to false is an ordinary failure',
      { attempt: response(489, { 'Svc-Nonretryable-Error': ['false'] }) },
      { kind: 'retry', dueAt: NOW + 12_182, error: 'HTTP 489' },
    ],
    [
      'the header on a 500 does nothing',
      { attempt: response(500, { 'Svc-Nonretryable-Error': ['true'] }) },
      { kind: 'retry', dueAt: NOW + 12_182, error: 'HTTP 500' },
    ],
    [
      'Retry-After seconds',
      { attempt: response(429, { 'Retry-After': ['30'] }) },
      { kind: 'retry', dueAt: NOW + 30_000, error: 'HTTP 429' },
    ],
    [
      'Retry-After case-insensitive, 0 = now',
      { attempt: response(503, { 'retry-after': ['0'] }) },
      { kind: 'retry', dueAt: NOW, error: 'HTTP 503' },
    ],
    [
      'Retry-After HTTP date',
      { attempt: response(503, { 'Retry-After': ['Thu, 01 Jan 2026 12:01:00 GMT'] }) },
      { kind: 'retry', dueAt: NOW + 60_000, error: 'HTTP 503' },
    ],
    [
      'Retry-After beats the expression',
      { attempt: response(429, { 'Retry-After': ['30'] }), retryDelay: expr('1000') },
      { kind: 'retry', dueAt: NOW + 30_000, error: 'HTTP 429' },
    ],
    [
      'Retry-After of exactly one day is used',
      { attempt: response(429, { 'Retry-After': ['86400'] }) },
      { kind: 'retry', dueAt: NOW + DAY, error: 'HTTP 429' },
    ],
    [
      'Retry-After over one day falls back to the expression',
      { attempt: response(429, { 'Retry-After': ['86401'] }), retryDelay: expr('1000') },
      { kind: 'retry', dueAt: NOW + 1_000, error: 'HTTP 429' },
    ],
    [
      'Retry-After over one day falls back to the default backoff',
      { attempt: response(429, { 'Retry-After': ['86401'] }) },
      { kind: 'retry', dueAt: NOW + 12_182, error: 'HTTP 429' },
    ],
    [
      'unparseable Retry-After falls back',
      { attempt: response(429, { 'Retry-After': ['later'] }) },
      { kind: 'retry', dueAt: NOW + 12_182, error: 'HTTP 429' },
    ],
    [
      'X-RateLimit-Reset-Tokens as a Go duration',
      { attempt: response(429, { 'X-Ratelimit-Reset-Tokens': ['6m0s'] }) },
      { kind: 'retry', dueAt: NOW + 360_000, error: 'HTTP 429' },
    ],
    [
      'the longest usable reset header wins',
      {
        attempt: response(429, {
          'Retry-After': ['1'],
          'X-Ratelimit-Reset-Requests': ['2s'],
          'X-Ratelimit-Reset-Tokens': ['6m0s'],
        }),
      },
      { kind: 'retry', dueAt: NOW + 360_000, error: 'HTTP 429' },
    ],
    [
      'an epoch X-RateLimit-Reset (too far) is ignored',
      { attempt: response(429, { 'Retry-After': ['5'], 'X-Ratelimit-Reset': ['1767268800'] }) },
      { kind: 'retry', dueAt: NOW + 5_000, error: 'HTTP 429' },
    ],
    [
      'expression gets retried (0 for the first retry)',
      { retryDelay: expr('1000 * (1 + retried)') },
      { kind: 'retry', dueAt: NOW + 1_000, error: 'HTTP 500' },
    ],
    [
      'expression with retried = 2',
      { retried: 2, retryDelay: expr('pow(2, retried) * 1000') },
      { kind: 'retry', dueAt: NOW + 4_000, error: 'HTTP 500' },
    ],
    [
      'expression result rounded up to whole ms',
      { retryDelay: expr('10.2') },
      { kind: 'retry', dueAt: NOW + 11, error: 'HTTP 500' },
    ],
    [
      'negative expression result → now',
      { retryDelay: expr('0 - 5000') },
      { kind: 'retry', dueAt: NOW, error: 'HTTP 500' },
    ],
    [
      'expression result capped at one day',
      { retryDelay: expr('2 * 86400000') },
      { kind: 'retry', dueAt: NOW + DAY, error: 'HTTP 500' },
    ],
    [
      'Infinity falls back to the default backoff',
      { retryDelay: expr('1 / retried') },
      { kind: 'retry', dueAt: NOW + 12_182, error: 'HTTP 500' },
    ],
    [
      'NaN falls back to the default backoff',
      { retried: 1, retryDelay: expr('sqrt(retried - 2)') },
      { kind: 'retry', dueAt: NOW + 148_413, error: 'HTTP 500' },
    ],
    [
      'Retry-After on an error attempt does not exist: expression used',
      { attempt: { kind: 'error', error: 'timeout' }, retryDelay: expr('500') },
      { kind: 'retry', dueAt: NOW + 500, error: 'timeout' },
    ],
  ])('%s', (_, overrides, outcome) => {
    expect(decideOutcome({ ...base, ...overrides })).toEqual(outcome);
  });
});

describe('describeAttempt', () => {
  const long = 'x'.repeat(300);
  const binary = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  it.each<[string, AttemptResult, string]>([
    [
      'error text as is',
      { kind: 'error', error: 'getaddrinfo ENOTFOUND x' },
      'getaddrinfo ENOTFOUND x',
    ],
    ['empty body', response(500), 'HTTP 500'],
    ['text body', response(500, {}, 'internal error'), 'HTTP 500: internal error'],
    ['whitespace collapsed', response(502, {}, '  bad\n\n  gateway \t'), 'HTTP 502: bad gateway'],
    ['whitespace-only body', response(500, {}, ' \n '), 'HTTP 500'],
    ['cut at 200 characters', response(500, {}, long), `HTTP 500: ${'x'.repeat(200)}…`],
    ['exactly 200 characters', response(500, {}, 'y'.repeat(200)), `HTTP 500: ${'y'.repeat(200)}`],
    [
      'non-ASCII counted as characters',
      response(500, {}, 'é'.repeat(201)),
      `HTTP 500: ${'é'.repeat(200)}…`,
    ],
    ['JSON body', response(400, {}, '{"error":"bad"}'), 'HTTP 400: {"error":"bad"}'],
    [
      'binary body left out',
      { kind: 'response', status: 500, headers: {}, body: binary },
      'HTTP 500',
    ],
    [
      'invalid UTF-8 left out',
      { kind: 'response', status: 500, headers: {}, body: new Uint8Array([0x66, 0xff, 0x66]) },
      'HTTP 500',
    ],
    [
      'multi-byte character cut by the excerpt window is fine',
      { kind: 'response', status: 500, headers: {}, body: text(`${'a'.repeat(799)}é`) },
      `HTTP 500: ${'a'.repeat(200)}…`,
    ],
  ])('%s', (_, attempt, expected) => {
    expect(describeAttempt(attempt)).toBe(expected);
  });
});
