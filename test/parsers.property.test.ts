/**
 * Hostile input, property-based (fast-check): every parser of client input either returns or
 * throws Ferry's own validation error (a `FerryError` with a 4xx status), whatever the text. Any
 * other exception (a TypeError, a RangeError from a stack overflow, a RegExp blow-up turning into
 * a timeout) would become a 500 or a hang in the API. Each property runs a few thousand inputs
 * mixing random Unicode, the parser's own vocabulary and extreme sizes.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseQuery } from '../src/api/query.js';
import { parseWorkflowQuery } from '../src/api/workflow-query.js';
import { parseCron } from '../src/core/cron.js';
import { checkHttpUrl, parseDestination } from '../src/core/destination.js';
import { parseDuration } from '../src/core/duration.js';
import { FerryError } from '../src/core/errors.js';
import { DEFAULT_PLANS } from '../src/core/plans.js';
import { parsePublishSettings } from '../src/core/publish-request.js';
import { parseRedactFields } from '../src/core/redaction.js';
import { compileRetryDelay } from '../src/core/retry-delay.js';
import { parseRetryAfter } from '../src/core/retry-timing.js';
import { parseWaitRequest } from '../src/core/workflow-events.js';
import { parseWorkflowHeaders } from '../src/core/workflow.js';

const RUNS = 2_000;
const NOW = Date.UTC(2026, 0, 1);

/** Calls `f`; passes when it returns or throws a 4xx FerryError; fails with what it threw otherwise. */
function onlyValidationErrors(f: () => unknown): void {
  try {
    f();
  } catch (err) {
    if (err instanceof FerryError && err.status >= 400 && err.status < 500) return;
    throw new Error(`threw something other than a 4xx FerryError: ${String(err)}`, { cause: err });
  }
}

/** Text built from `tokens` (the parser's vocabulary) mixed with random characters. */
function textOf(tokens: string[], maxLength = 60): fc.Arbitrary<string> {
  return fc.oneof(
    fc.string({ unit: 'binary', maxLength }),
    fc
      .array(fc.oneof(fc.constantFrom(...tokens), fc.string({ maxLength: 3 })), { maxLength })
      .map((parts) => parts.join('')),
    // Extremes: very long repetitions of one token.
    fc
      .tuple(fc.constantFrom(...tokens), fc.integer({ min: 1, max: 20_000 }))
      .map(([t, n]) => t.repeat(n)),
  );
}

const DIGITS = ['0', '1', '9', '00', '1e400', '9'.repeat(30), '-', '+', '.', ' ', '\t', '\u0000'];

describe('parsers never throw anything but a validation error', () => {
  it('durations (Svc-Delay, Svc-Timeout, --lease)', () => {
    const text = textOf([...DIGITS, 'd', 'h', 'm', 's', 'ms', 'us', 'µs', 'ns', 'y']);
    fc.assert(
      fc.property(text, (s) => {
        onlyValidationErrors(() => {
          const ms = parseDuration(s, 'Svc-Delay');
          expect(Number.isSafeInteger(ms) && ms >= 0).toBe(true);
        });
      }),
      { numRuns: RUNS },
    );
  });

  it('retry-delay expressions: compile bounded, evaluate without throwing', () => {
    const tokens = [
      ...DIGITS,
      'retried',
      'pow(',
      'exp(',
      'sqrt(',
      'min(',
      'max(',
      'abs(',
      '(',
      ')',
      ',',
      '*',
      '/',
      '%',
      '**',
      '?',
      ':',
      '"',
      '[',
      ']',
      'constructor',
      '__proto__',
      '.',
      'this',
    ];
    fc.assert(
      fc.property(textOf(tokens, 200), fc.integer({ min: -5, max: 1000 }), (s, retried) => {
        const started = performance.now();
        onlyValidationErrors(() => {
          const f = compileRetryDelay(s, 'Svc-Retry-Delay');
          expect(typeof f(retried)).toBe('number');
        });
        expect(performance.now() - started).toBeLessThan(200);
      }),
      { numRuns: RUNS },
    );
  });

  it('cron expressions (Svc-Cron)', () => {
    const text = textOf([
      ...DIGITS,
      '*',
      '/',
      ',',
      '-',
      'L',
      'W',
      '#',
      '?',
      'MON',
      'JAN',
      'CRON_TZ=',
      'TZ=',
      'Europe/Paris',
      'Mars/Base',
      '@daily',
      '@every',
      '60',
      '31',
    ]);
    fc.assert(
      fc.property(text, (s) => {
        const started = performance.now();
        onlyValidationErrors(() => parseCron(s, 'Svc-Cron'));
        expect(performance.now() - started).toBeLessThan(500);
      }),
      { numRuns: RUNS },
    );
  });

  it('redaction lists (Svc-Redact-Fields)', () => {
    const text = textOf(['body', 'header', 'headers', 'header[', ']', '[', ',', ' ', 'X-A', '\n']);
    fc.assert(
      fc.property(text, (s) =>
        onlyValidationErrors(() => parseRedactFields(s, 'Svc-Redact-Fields')),
      ),
      { numRuns: RUNS },
    );
  });

  it('destinations in the publish path and URLs in headers', () => {
    const text = textOf([
      'http://',
      'https://',
      'ftp://',
      '//',
      '%',
      '%2F',
      '%zz',
      '%00',
      '@',
      ':',
      '[',
      ']',
      '::1',
      '127.0.0.1',
      '0x7f.1',
      '017700000001',
      '2130706433',
      'example.com',
      '?',
      '&',
      '=',
      '#',
      'svc-retries=',
      'queue_token=',
      '\\',
      'xn--',
      '\u202e',
    ]);
    fc.assert(
      fc.property(text, text, (path, query) => {
        onlyValidationErrors(() =>
          parseDestination({ rawPath: path, rawQuery: query, prefix: 'Svc' }),
        );
        onlyValidationErrors(() => checkHttpUrl(path, 'Svc-Callback'));
      }),
      { numRuns: RUNS },
    );
  });

  it('publish settings: every Svc-* header with hostile values, flow control included', () => {
    const names = [
      'Method',
      'Retries',
      'Retry-Delay',
      'Delay',
      'Not-Before',
      'Timeout',
      'Label',
      'Flow-Control-Key',
      'Flow-Control-Value',
      'Deduplication-Id',
      'Content-Based-Deduplication',
      'Callback',
      'Callback-Retries',
      'Callback-Delay',
      'Callback-Method',
      'Failure-Callback',
      'Failure-Callback-Timeout',
      'Redact-Fields',
      'Header-Forward',
      'Forward-X-A',
      'Callback-Forward-X-B',
    ];
    const value = textOf([
      ...DIGITS,
      'parallelism=',
      'rate=',
      'period=',
      ',',
      '=',
      's',
      'm',
      'true',
      'GET',
      'https://example.com/',
      'retried',
    ]);
    const headers = fc.dictionary(
      fc.constantFrom(...names).map((n) => `svc-${n.toLowerCase()}`),
      fc.oneof(value, fc.array(value, { maxLength: 3 })),
    );
    fc.assert(
      fc.property(headers, fc.string({ unit: 'binary', maxLength: 80 }), (h, query) => {
        for (const plan of [DEFAULT_PLANS.free, DEFAULT_PLANS.paid]) {
          onlyValidationErrors(() =>
            parsePublishSettings({
              prefix: 'Svc',
              headers: h,
              query: new URLSearchParams(query),
              plan,
              now: NOW,
            }),
          );
        }
        onlyValidationErrors(() => parseWorkflowHeaders('Svc', h));
      }),
      { numRuns: RUNS },
    );
  });

  it('list query filters (events, DLQ, workflow runs)', () => {
    const name = fc.constantFrom(
      'messageId',
      'url',
      'topicName',
      'state',
      'label',
      'fromDate',
      'toDate',
      'count',
      'cursor',
      'responseStatus',
      'workflowRunId',
      'workflowUrl',
      'workflowCreatedAt',
      'callerIp',
      'flowControlKey',
      'scheduleId',
      'label[]',
      'unknown',
      '__proto__',
      'constructor',
    );
    const value = textOf([...DIGITS, ',', 'DELIVERED', 'RUN_SUCCESS', '-1', '1e21', '%']);
    const params = fc
      .array(fc.tuple(name, value), { maxLength: 8 })
      .map((pairs) => new URLSearchParams(pairs));
    const filters = [
      'messageId',
      'url',
      'topicName',
      'state',
      'label',
      'fromDate',
      'toDate',
      'responseStatus',
      'scheduleId',
      'callerIp',
      'flowControlKey',
    ];
    fc.assert(
      fc.property(params, (p) => {
        onlyValidationErrors(() => parseQuery(p, { filters, maxCount: 1000, cursor: true }));
        onlyValidationErrors(() => parseWorkflowQuery(p, { maxCount: 1000 }));
      }),
      { numRuns: RUNS },
    );
  });

  it('workflow wait requests (JSON bodies)', () => {
    const body = fc.oneof(
      fc.json({ maxDepth: 4 }),
      fc.string({ unit: 'binary', maxLength: 200 }),
      fc
        .record({
          url: fc.oneof(fc.string(), fc.constant('https://example.com/x')),
          timeout: fc.oneof(fc.string(), fc.double(), fc.integer()),
          timeoutHeaders: fc.anything(),
          step: fc.anything(),
        })
        .map((o) => JSON.stringify(o)),
    );
    fc.assert(
      fc.property(body, (b) =>
        onlyValidationErrors(() => parseWaitRequest(Buffer.from(b), 7 * 86_400_000)),
      ),
      { numRuns: RUNS },
    );
  });

  it("a destination's Retry-After: a delay in ms or nothing, never an exception", () => {
    const text = textOf([...DIGITS, 'GMT', 'Sun, ', 'Nov', 'ms', 's', 'h', ':', ' ']);
    fc.assert(
      fc.property(text, (s) => {
        const ms = parseRetryAfter(s, NOW);
        expect(ms === undefined || (Number.isFinite(ms) && ms >= 0)).toBe(true);
      }),
      { numRuns: RUNS },
    );
  });
});

describe('expressions are bounded', () => {
  it.each([
    ['pow(10, 400)', 'pow(10, 400)'],
    ['10,000 nested parentheses', `${'('.repeat(10_000)}1${')'.repeat(10_000)}`],
    ['a 100,000-character sum', `1${'+1'.repeat(50_000)}`],
  ])('%s is a 400', (_name, source) => {
    let error: unknown;
    try {
      compileRetryDelay(source, 'Svc-Retry-Delay');
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(FerryError);
    expect((error as FerryError).status).toBe(400);
  });
});
