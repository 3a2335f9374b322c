import { describe, expect, it } from 'vitest';
import { FerryError } from './errors.js';
import { checkEventId, parseWaitRequest, waitResultBody, waiterJson } from './workflow-events.js';

const WEEK_MS = 7 * 86_400_000;
const body = (value: unknown) => Buffer.from(JSON.stringify(value));
const STEP = { stepId: 2, stepName: 'wait', stepType: 'Wait', concurrent: 1 };
const URL_ = 'https://app.example.com/wf';

function errorOf(fn: () => unknown): FerryError {
  try {
    fn();
  } catch (error) {
    if (error instanceof FerryError) return error;
    throw error;
  }
  throw new Error('expected a FerryError');
}

describe('parseWaitRequest', () => {
  it.each<[string, unknown, number]>([
    ['a duration', '1h', 3_600_000],
    ['the SDK default', '7d', WEEK_MS],
    ['seconds as a number', 90, 90_000],
    ['seconds as a string', '90', 90_000],
  ])('reads the timeout as %s', (_name, timeout, ms) => {
    const wait = parseWaitRequest(body({ url: URL_, timeout, step: STEP }), WEEK_MS);
    expect(wait).toEqual({ url: URL_, timeoutMs: ms, step: STEP });
  });

  it('keeps timeoutUrl and timeoutHeaders (a single string becomes a list)', () => {
    const wait = parseWaitRequest(
      body({
        url: URL_,
        timeout: '1s',
        step: STEP,
        timeoutUrl: `${URL_}/t`,
        timeoutHeaders: { 'Upstash-Workflow-Runid': ['wfr_1'], 'X-A': 'b' },
      }),
      WEEK_MS,
    );
    expect(wait.timeoutUrl).toBe(`${URL_}/t`);
    expect(wait.timeoutHeaders).toEqual({ 'Upstash-Workflow-Runid': ['wfr_1'], 'X-A': ['b'] });
  });

  it.each<[string, unknown, number, string]>([
    ['not JSON', 'x{', 400, 'invalid body'],
    ['an array', [], 400, 'invalid body'],
    ['no url', { timeout: '1s', step: STEP }, 400, 'invalid url'],
    ['a URL that is not http', { url: 'ftp://x', timeout: '1s', step: STEP }, 400, 'invalid url'],
    ['no step', { url: URL_, timeout: '1s' }, 400, 'invalid step'],
    ['a bad duration', { url: URL_, timeout: 'soon', step: STEP }, 400, 'invalid timeout'],
    ['a negative number', { url: URL_, timeout: -1, step: STEP }, 400, 'invalid timeout'],
    ['no timeout', { url: URL_, step: STEP }, 400, 'invalid timeout'],
    ['more than the limit', { url: URL_, timeout: '8d', step: STEP }, 412, 'max_delay'],
    [
      'headers that are not strings',
      { url: URL_, timeout: '1s', step: STEP, timeoutHeaders: { a: [1] } },
      400,
      'invalid timeoutHeaders',
    ],
    [
      'a header value the HTTP client cannot send',
      { url: URL_, timeout: '1s', step: STEP, timeoutHeaders: { 'X-A': '日本' } },
      400,
      'invalid timeoutHeaders.X-A',
    ],
    [
      'a header name that is not a token',
      { url: URL_, timeout: '1s', step: STEP, timeoutHeaders: { 'bad name': 'x' } },
      400,
      'invalid timeoutHeaders',
    ],
  ])('refuses %s', (_name, value, status, message) => {
    const raw = typeof value === 'string' ? Buffer.from(value) : body(value);
    const error = errorOf(() => parseWaitRequest(raw, WEEK_MS));
    expect(error.status).toBe(status);
    expect(error.message).toContain(message);
  });
});

describe('waitResultBody', () => {
  it('a notify: the step with the event data as base64 `out`', () => {
    const result = JSON.parse(
      Buffer.from(waitResultBody(STEP, { eventData: Buffer.from('{"paid":true}') })).toString(),
    ) as Record<string, unknown>;
    expect(result).toEqual({
      ...STEP,
      out: Buffer.from('{"paid":true}').toString('base64'),
      waitTimeout: false,
    });
  });

  it('a timeout: the step with waitTimeout and no `out`, even if the step had one', () => {
    const result = JSON.parse(
      Buffer.from(waitResultBody({ ...STEP, out: 'x' }, { timeout: true })).toString(),
    ) as Record<string, unknown>;
    expect(result).toEqual({ ...STEP, waitTimeout: true });
  });
});

describe('checkEventId and waiterJson', () => {
  it('accepts 1-256 characters', () => {
    expect(checkEventId('e'.repeat(256))).toHaveLength(256);
    expect(errorOf(() => checkEventId('e'.repeat(257))).status).toBe(400);
  });

  it('shows the deadline in Unix seconds', () => {
    const json = waiterJson({
      accountId: 'a',
      eventId: 'e',
      id: 'msg_1',
      runId: 'wfr_1',
      url: URL_,
      deadline: 1_700_000_000_999,
      createdAt: 0,
      step: STEP,
      headers: { 'X-A': ['1'] },
    });
    expect(json).toEqual({ url: URL_, deadline: 1_700_000_000, headers: { 'X-A': ['1'] } });
  });
});
