import { describe, expect, it } from 'vitest';
import { FerryError } from './errors.js';
import { DEFAULT_PLANS, type PlanLimits } from './plans.js';
import {
  contentDeduplicationKey,
  parsePublishSettings,
  type IncomingHeaders,
  type PublishSettings,
} from './publish-request.js';
import type { HeaderMap } from './types.js';

const NOW = Date.UTC(2026, 0, 1);
const NOW_SEC = NOW / 1000;
const FREE: PlanLimits = DEFAULT_PLANS.free;
const PAID: PlanLimits = DEFAULT_PLANS.paid;

interface Case {
  headers?: IncomingHeaders;
  query?: string;
  prefix?: string;
  plan?: PlanLimits;
}

function parse(c: Case): PublishSettings {
  return parsePublishSettings({
    prefix: c.prefix ?? 'Svc',
    headers: c.headers ?? {},
    query: new URLSearchParams(c.query ?? ''),
    plan: c.plan ?? FREE,
    now: NOW,
  });
}

const DEFAULTS: PublishSettings = {
  method: 'POST',
  headers: {},
  headerForward: false,
  retries: FREE.default_retries,
  notBefore: NOW,
  contentBasedDeduplication: false,
};

describe('parsePublishSettings: accepted input', () => {
  it.each<[string, Case, Partial<PublishSettings>]>([
    ['nothing set: defaults', {}, {}],
    ['paid plan default retries', { plan: PAID }, { retries: 5 }],
    // method
    ['method', { headers: { 'svc-method': 'PUT' } }, { method: 'PUT' }],
    ['method, any case', { headers: { 'svc-method': 'delete' } }, { method: 'DELETE' }],
    // retries
    ['retries', { headers: { 'svc-retries': '2' } }, { retries: 2 }],
    ['retries 0', { headers: { 'svc-retries': '0' } }, { retries: 0 }],
    ['retries at the cap', { headers: { 'svc-retries': '3' } }, { retries: 3 }],
    ['retries on paid', { plan: PAID, headers: { 'svc-retries': '20' } }, { retries: 20 }],
    // retry delay
    [
      'retry delay stored trimmed',
      { headers: { 'svc-retry-delay': ' pow(2, retried) * 1000 ' } },
      { retryDelayExpression: 'pow(2, retried) * 1000' },
    ],
    // timeout
    ['timeout shorter than the plan', { headers: { 'svc-timeout': '30s' } }, { timeoutMs: 30_000 }],
    ['timeout combined units', { headers: { 'svc-timeout': '1m30s' } }, { timeoutMs: 90_000 }],
    ['timeout equal to the plan: not stored', { headers: { 'svc-timeout': '900' } }, {}],
    ['timeout longer than the plan: clamped', { headers: { 'svc-timeout': '2h' } }, {}],
    // delay and not-before
    ['delay', { headers: { 'svc-delay': '10s' } }, { notBefore: NOW + 10_000 }],
    ['delay combined', { headers: { 'svc-delay': '1d2h' } }, { notBefore: NOW + 26 * 3_600_000 }],
    ['delay = max_delay', { headers: { 'svc-delay': '7d' } }, { notBefore: NOW + 7 * 86_400_000 }],
    [
      'not-before',
      { headers: { 'svc-not-before': String(NOW_SEC + 60) } },
      { notBefore: NOW + 60_000 },
    ],
    [
      'not-before wins over delay',
      { headers: { 'svc-not-before': String(NOW_SEC + 5), 'svc-delay': '1h' } },
      { notBefore: NOW + 5_000 },
    ],
    [
      'not-before wins even over a delay beyond the limit',
      { headers: { 'svc-not-before': String(NOW_SEC + 5), 'svc-delay': '30d' } },
      { notBefore: NOW + 5_000 },
    ],
    ['not-before in the past', { headers: { 'svc-not-before': '1000' } }, { notBefore: 1_000_000 }],
    // labels
    ['one label', { headers: { 'svc-label': 'billing' } }, { labels: ['billing'] }],
    [
      'labels split, trimmed, empties dropped',
      { headers: { 'svc-label': ' a , b,,c , ' } },
      { labels: ['a', 'b', 'c'] },
    ],
    ['only commas: no labels', { headers: { 'svc-label': ' , ,' } }, {}],
    [
      'labels from repeated headers',
      { headers: { 'svc-label': ['a', 'b'] } },
      { labels: ['a', 'b'] },
    ],
    [
      'label with spaces and punctuation',
      { headers: { 'svc-label': 'daily report:v2/eu' } },
      { labels: ['daily report:v2/eu'] },
    ],
    [
      '256-character label',
      { headers: { 'svc-label': 'l'.repeat(256) } },
      { labels: ['l'.repeat(256)] },
    ],
    // deduplication
    [
      'deduplication id',
      { headers: { 'svc-deduplication-id': ' abc-1 ' } },
      { deduplicationId: 'abc-1' },
    ],
    [
      'content-based deduplication',
      { headers: { 'svc-content-based-deduplication': 'true' } },
      { contentBasedDeduplication: true },
    ],
    [
      'content-based deduplication false, any case',
      { headers: { 'svc-content-based-deduplication': 'FALSE' } },
      {},
    ],
    // flow control
    [
      'flow control full',
      {
        headers: {
          'svc-flow-control-key': 'k1',
          'svc-flow-control-value': 'parallelism=2, rate=10, period=1m',
        },
      },
      { flowControl: { key: 'k1', parallelism: 2, rate: 10, periodSec: 60 } },
    ],
    [
      'flow control, no spaces, any order',
      { headers: { 'svc-flow-control-key': 'k', 'svc-flow-control-value': 'period=30,rate=5' } },
      { flowControl: { key: 'k', rate: 5, periodSec: 30 } },
    ],
    [
      'flow control parallelism only, default period',
      { headers: { 'svc-flow-control-key': 'k', 'svc-flow-control-value': 'parallelism=1' } },
      { flowControl: { key: 'k', parallelism: 1, periodSec: 1 } },
    ],
    [
      'flow control spaces around "=" and a trailing comma',
      { headers: { 'svc-flow-control-key': 'k', 'svc-flow-control-value': ' rate = 3 , ' } },
      { flowControl: { key: 'k', rate: 3, periodSec: 1 } },
    ],
    [
      'flow control period of a week',
      { headers: { 'svc-flow-control-key': 'k', 'svc-flow-control-value': 'rate=1, period=7d' } },
      { flowControl: { key: 'k', rate: 1, periodSec: 604_800 } },
    ],
    // header forward flag
    ['header forward false', { headers: { 'svc-header-forward': 'false' } }, {}],
    // unknown prefixed headers are ignored
    [
      'telemetry and unknown prefixed headers ignored',
      {
        prefix: 'Upstash',
        headers: { 'upstash-telemetry-sdk': 'upstash-qstash-js@2', 'upstash-whatever': 'x' },
      },
      {},
    ],
    // prefix
    [
      'prefix is a setting',
      { prefix: 'Upstash', headers: { 'upstash-retries': '1', 'svc-retries': 'nonsense' } },
      { retries: 1 },
    ],
    ['names matched case-insensitively', { headers: { 'SVC-RETRIES': '1' } }, { retries: 1 }],
    // query forms
    [
      'query forms',
      { query: 'svc-retries=1&svc-delay=100s&svc-method=GET&svc-label=a,b' },
      { retries: 1, notBefore: NOW + 100_000, method: 'GET', labels: ['a', 'b'] },
    ],
    ['query name case-insensitive', { query: 'Svc-Retries=2' }, { retries: 2 }],
    [
      'header wins over query',
      { headers: { 'svc-retries': '1' }, query: 'svc-retries=2' },
      { retries: 1 },
    ],
    ['non-Ferry query parameters ignored', { query: 'retries=x&queue_token=T' }, {}],
  ])('%s', (_, c, expected) => {
    expect(parse(c)).toEqual({ ...DEFAULTS, ...expected });
  });
});

describe('parsePublishSettings: forwarded headers', () => {
  it.each<[string, Case, Record<string, string[]>]>([
    [
      'Content-Type forwarded',
      { headers: { 'content-type': 'application/json' } },
      { 'Content-Type': ['application/json'] },
    ],
    [
      'prefix stripped, name canonical',
      { headers: { 'svc-forward-x-token': 'abc' } },
      { 'X-Token': ['abc'] },
    ],
    [
      'only the leading prefix is stripped',
      { headers: { 'svc-forward-upstash-foo': '1', 'svc-forward-svc-bar': '2' } },
      { 'Upstash-Foo': ['1'], 'Svc-Bar': ['2'] },
    ],
    [
      'Authorization can be forwarded explicitly',
      { headers: { 'svc-forward-authorization': 'Bearer x' } },
      { Authorization: ['Bearer x'] },
    ],
    [
      'multiple values stay separate',
      { headers: { 'svc-forward-x-a': ['1', '2'] } },
      { 'X-A': ['1', '2'] },
    ],
    ['query form', { query: 'svc-forward-x-token=abc' }, { 'X-Token': ['abc'] }],
    [
      'repeated query values stay separate',
      { query: 'svc-forward-x-a=1&svc-forward-x-a=2' },
      { 'X-A': ['1', '2'] },
    ],
    [
      'header wins over query of the same name',
      { headers: { 'svc-forward-x-a': 'h' }, query: 'svc-forward-x-a=q&svc-forward-x-b=q' },
      { 'X-A': ['h'], 'X-B': ['q'] },
    ],
    [
      'unforwarded request headers are not sent',
      { headers: { 'user-agent': 'curl', 'x-custom': '1', authorization: 'Bearer T' } },
      {},
    ],
    [
      'Upstash dialect',
      { prefix: 'Upstash', headers: { 'upstash-forward-x-a': '1', 'svc-forward-x-b': '2' } },
      { 'X-A': ['1'] },
    ],
    [
      'header forwarding: everything but hop-by-hop, Authorization and control headers',
      {
        headers: {
          'svc-header-forward': 'true',
          'content-type': 'text/plain',
          'x-github-event': 'push',
          'user-agent': 'GitHub-Hookshot',
          'set-cookie': ['a=1', 'b=2'],
          authorization: 'Bearer ferry-token',
          host: 'ferry.example',
          connection: 'keep-alive',
          'content-length': '10',
          'transfer-encoding': 'chunked',
          expect: '100-continue',
          'svc-retries': '1',
          'svc-telemetry-sdk': 'x',
          ':path': '/v2/publish/x',
          'upstash-signature': 'foreign dialect header is forwarded',
        },
      },
      {
        'Content-Type': ['text/plain'],
        'X-Github-Event': ['push'],
        'User-Agent': ['GitHub-Hookshot'],
        'Set-Cookie': ['a=1', 'b=2'],
        'Upstash-Signature': ['foreign dialect header is forwarded'],
      },
    ],
    [
      'header forwarding via the query; explicit forward replaces',
      {
        query: 'svc-header-forward=true',
        headers: { 'x-a': 'from request', 'svc-forward-x-a': 'explicit' },
      },
      { 'X-A': ['explicit'] },
    ],
    [
      "header forwarding keeps a sender's own non-Bearer Authorization (the token came by query)",
      {
        query: 'svc-header-forward=true&queue_token=T',
        headers: { authorization: 'Basic dTpw' },
      },
      { Authorization: ['Basic dTpw'] },
    ],
    [
      'explicit Content-Type replaces the request one',
      { headers: { 'content-type': 'text/plain', 'svc-forward-content-type': 'application/json' } },
      { 'Content-Type': ['application/json'] },
    ],
  ])('%s', (_, c, headers) => {
    expect(parse(c).headers).toEqual(headers);
  });
});

describe('parsePublishSettings: rejected input', () => {
  it.each<[string, Case, number, string]>([
    ['unknown method', { headers: { 'svc-method': 'HEAD' } }, 400, 'invalid Svc-Method "HEAD"'],
    ['retries decimal', { headers: { 'svc-retries': '3.5' } }, 400, 'invalid Svc-Retries "3.5"'],
    ['retries negative', { headers: { 'svc-retries': '-1' } }, 400, 'invalid Svc-Retries "-1"'],
    ['retries text', { headers: { 'svc-retries': 'abc' } }, 400, 'invalid Svc-Retries "abc"'],
    ['retries empty', { headers: { 'svc-retries': '' } }, 400, 'invalid Svc-Retries ""'],
    ['retries exponent', { headers: { 'svc-retries': '1e1' } }, 400, 'invalid Svc-Retries "1e1"'],
    [
      'retries twice',
      { headers: { 'svc-retries': ['1', '2'] } },
      400,
      'invalid Svc-Retries "1, 2"',
    ],
    ['retries from the query', { query: 'svc-retries=x' }, 400, 'invalid Svc-Retries "x"'],
    ['delay unit repeated', { headers: { 'svc-delay': '1d1d' } }, 400, 'unit "d" is repeated'],
    ['delay units out of order', { headers: { 'svc-delay': '1s1m' } }, 400, 'invalid Svc-Delay'],
    ['timeout units out of order', { query: 'svc-timeout=30m1h' }, 400, 'invalid Svc-Timeout'],
    [
      'callback delay unit repeated',
      { headers: { 'svc-callback': 'https://cb.example', 'svc-callback-delay': '1m1m' } },
      400,
      'invalid Svc-Callback-Delay "1m1m"',
    ],
    [
      'flow-control period units out of order',
      { headers: { 'svc-flow-control-key': 'k', 'svc-flow-control-value': 'rate=1, period=1s1m' } },
      400,
      'period "1s1m"',
    ],
    [
      'retries over the cap',
      { headers: { 'svc-retries': '4' } },
      412,
      'Svc-Retries "4" is more than the plan\'s max_retries (3)',
    ],
    [
      'prefix used in messages',
      { prefix: 'Upstash', headers: { 'upstash-retries': 'x' } },
      400,
      'invalid Upstash-Retries "x"',
    ],
    [
      'bad retry delay',
      { headers: { 'svc-retry-delay': 'foo(1)' } },
      400,
      'invalid Svc-Retry-Delay "foo(1)": unknown function "foo"',
    ],
    [
      'empty retry delay',
      { query: 'svc-retry-delay=' },
      400,
      'invalid Svc-Retry-Delay "": empty expression',
    ],
    [
      'timeout 0',
      { headers: { 'svc-timeout': '0s' } },
      400,
      'invalid Svc-Timeout "0s": must be more than 0',
    ],
    [
      'timeout malformed',
      { headers: { 'svc-timeout': '10 minutes' } },
      400,
      'invalid Svc-Timeout "10 minutes"',
    ],
    ['delay malformed', { headers: { 'svc-delay': '1.5h' } }, 400, 'invalid Svc-Delay "1.5h"'],
    [
      'delay malformed even when not-before wins',
      { headers: { 'svc-delay': 'soon', 'svc-not-before': String(NOW_SEC) } },
      400,
      'invalid Svc-Delay "soon"',
    ],
    [
      'delay beyond max_delay',
      { headers: { 'svc-delay': '7d1s' } },
      412,
      'Svc-Delay "7d1s" is more than the plan\'s max_delay (604800 s)',
    ],
    [
      'not-before decimal',
      { headers: { 'svc-not-before': '1700000000.5' } },
      400,
      'invalid Svc-Not-Before "1700000000.5"',
    ],
    [
      'not-before negative',
      { headers: { 'svc-not-before': '-1' } },
      400,
      'invalid Svc-Not-Before "-1"',
    ],
    [
      'not-before beyond max_delay (milliseconds by mistake)',
      { headers: { 'svc-not-before': String(NOW) } },
      412,
      `Svc-Not-Before "${NOW}" is further ahead than the plan's max_delay (604800 s)`,
    ],
    [
      'label too long',
      { headers: { 'svc-label': `ok,${'l'.repeat(257)}` } },
      400,
      'longer than 256 characters',
    ],
    [
      'label with a control character',
      { query: 'svc-label=a%01b' },
      400,
      'invalid Svc-Label "a\\u0001b": control characters',
    ],
    [
      'content-based dedup not boolean',
      { headers: { 'svc-content-based-deduplication': 'yes' } },
      400,
      'invalid Svc-Content-Based-Deduplication "yes": expected true or false',
    ],
    [
      'header forward not boolean',
      { query: 'svc-header-forward=1' },
      400,
      'invalid Svc-Header-Forward "1"',
    ],
    [
      'empty deduplication id',
      { headers: { 'svc-deduplication-id': ' ' } },
      400,
      'invalid Svc-Deduplication-Id " ": must not be empty',
    ],
    [
      'deduplication id too long',
      { headers: { 'svc-deduplication-id': 'd'.repeat(1025) } },
      400,
      'longer than 1024 characters',
    ],
    [
      'flow control key without value',
      { headers: { 'svc-flow-control-key': 'k' } },
      400,
      'Svc-Flow-Control-Key requires Svc-Flow-Control-Value',
    ],
    [
      'flow control value without key',
      { headers: { 'svc-flow-control-value': 'rate=1' } },
      400,
      'Svc-Flow-Control-Value requires Svc-Flow-Control-Key',
    ],
    [
      'flow control key with spaces',
      { headers: { 'svc-flow-control-key': 'a b', 'svc-flow-control-value': 'rate=1' } },
      400,
      'invalid Svc-Flow-Control-Key "a b": spaces are not allowed',
    ],
    [
      'flow control without parallelism or rate',
      { headers: { 'svc-flow-control-key': 'k', 'svc-flow-control-value': 'period=1m' } },
      400,
      'at least one of parallelism and rate',
    ],
    [
      'flow control empty value',
      { headers: { 'svc-flow-control-key': 'k', 'svc-flow-control-value': '' } },
      400,
      'invalid Svc-Flow-Control-Value ""',
    ],
    [
      'flow control unknown setting',
      { headers: { 'svc-flow-control-key': 'k', 'svc-flow-control-value': 'rate=1, burst=2' } },
      400,
      'unknown setting "burst"',
    ],
    [
      'flow control without "="',
      { headers: { 'svc-flow-control-key': 'k', 'svc-flow-control-value': 'rate' } },
      400,
      'expected <name>=<value>, got "rate"',
    ],
    [
      'flow control rate 0',
      { headers: { 'svc-flow-control-key': 'k', 'svc-flow-control-value': 'rate=0' } },
      400,
      'rate must be a positive integer, got "0"',
    ],
    [
      'flow control parallelism decimal',
      { headers: { 'svc-flow-control-key': 'k', 'svc-flow-control-value': 'parallelism=1.5' } },
      400,
      'parallelism must be a positive integer, got "1.5"',
    ],
    [
      'flow control duplicate',
      { headers: { 'svc-flow-control-key': 'k', 'svc-flow-control-value': 'rate=1,rate=2' } },
      400,
      'rate is given twice',
    ],
    [
      'flow control period malformed',
      { headers: { 'svc-flow-control-key': 'k', 'svc-flow-control-value': 'rate=1, period=1.5s' } },
      400,
      'invalid Svc-Flow-Control-Value period "1.5s"',
    ],
    [
      'flow control period 0',
      { headers: { 'svc-flow-control-key': 'k', 'svc-flow-control-value': 'rate=1, period=0' } },
      400,
      'period must be more than 0',
    ],
    [
      'flow control period over a week',
      { headers: { 'svc-flow-control-key': 'k', 'svc-flow-control-value': 'rate=1, period=8d' } },
      400,
      'period must be at most 7d',
    ],
    [
      'flow control parallelism over the plan',
      { headers: { 'svc-flow-control-key': 'k', 'svc-flow-control-value': 'parallelism=11' } },
      412,
      "parallelism 11 is more than the plan's max_parallelism (10)",
    ],
    [
      'forward without a name',
      { query: 'svc-forward-=x' },
      400,
      'invalid header name "Svc-Forward-"',
    ],
    [
      'forward with an invalid name',
      { query: 'svc-forward-a%20b=x' },
      400,
      'invalid header name "svc-forward-a b"',
    ],
    [
      'forward of a hop-by-hop header',
      { headers: { 'svc-forward-host': 'evil.example' } },
      400,
      'Host cannot be forwarded',
    ],
    [
      'forwarded value with CR/LF',
      { query: 'svc-forward-x-a=1%0D%0AInjected:%201' },
      400,
      'invalid Svc-Forward-X-A "1\\r\\nInjected: 1": control characters',
    ],
  ])('%s', (_, c, status, message) => {
    let error: unknown;
    try {
      parse(c);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(FerryError);
    expect((error as FerryError).status).toBe(status);
    expect((error as FerryError).message).toContain(message);
  });
});

describe('contentDeduplicationKey', () => {
  const base: { url: string; body: Uint8Array; headers: HeaderMap } = {
    url: 'https://example.com/hook',
    body: new TextEncoder().encode('{"a":1}'),
    headers: { 'Content-Type': ['application/json'], 'X-A': ['1'] },
  };
  const key = contentDeduplicationKey(base);

  it('is a SHA-256 hex digest', () => {
    expect(key).toMatch(/^[0-9a-f]{64}$/);
  });

  it.each<[string, Partial<typeof base>, boolean]>([
    ['same input', {}, true],
    [
      'header order does not matter',
      { headers: { 'X-A': ['1'], 'Content-Type': ['application/json'] } },
      true,
    ],
    [
      'header name case does not matter',
      { headers: { 'content-type': ['application/json'], 'x-a': ['1'] } },
      true,
    ],
    ['different URL', { url: 'https://example.com/other' }, false],
    ['different body', { body: new TextEncoder().encode('{"a":2}') }, false],
    [
      'different Content-Type',
      { headers: { 'Content-Type': ['text/plain'], 'X-A': ['1'] } },
      false,
    ],
    [
      'different forwarded header',
      { headers: { 'Content-Type': ['application/json'], 'X-A': ['2'] } },
      false,
    ],
    ['extra forwarded header', { headers: { ...base.headers, 'X-B': ['1'] } }, false],
    [
      'value order matters',
      { headers: { 'Content-Type': ['application/json'], 'X-A': ['1', '2'] } },
      false,
    ],
    ['no headers', { headers: {} }, false],
    // Boundaries are unambiguous: moving bytes between URL and body changes the key.
    [
      'URL/body boundary',
      { url: 'https://example.com/hook{"a"', body: new TextEncoder().encode(':1}') },
      false,
    ],
  ])('%s → equal: %s', (_, change, equal) => {
    expect(contentDeduplicationKey({ ...base, ...change }) === key).toBe(equal);
  });
});

describe('callback settings', () => {
  const base = { prefix: 'Svc', query: new URLSearchParams(), plan: DEFAULT_PLANS.free, now: 0 };

  it('reads the URL and every setting, for both kinds, from headers and the query', () => {
    const settings = parsePublishSettings({
      ...base,
      headers: {
        'svc-callback': 'https://cb.example.com/done',
        'svc-callback-forward-x-token': 'abc',
        'svc-callback-method': 'put',
        'svc-callback-timeout': '10s',
        'svc-callback-retries': '1',
        'svc-callback-retry-delay': '500 * retried',
        'svc-callback-delay': '5s',
      },
      query: new URLSearchParams(
        'svc-failure-callback=http://fail.example.com/f&svc-failure-callback-forward-x-b=2',
      ),
    });
    expect(settings.callback).toEqual({
      url: 'https://cb.example.com/done',
      method: 'PUT',
      headers: { 'X-Token': ['abc'] },
      timeoutMs: 10_000,
      retries: 1,
      retryDelayExpression: '500 * retried',
      delayMs: 5_000,
    });
    expect(settings.failureCallback).toEqual({
      url: 'http://fail.example.com/f',
      method: 'POST',
      headers: { 'X-B': ['2'] },
    });
    // Callback headers are not forwarded to the destination.
    expect(settings.headers).toEqual({});
  });

  it.each([
    [
      { 'svc-callback': 'ftp://x.example' },
      /invalid Svc-Callback "ftp:\/\/x.example": expected an http/,
    ],
    [{ 'svc-callback': 'not a url' }, /invalid Svc-Callback/],
    [{ 'svc-failure-callback': '/relative' }, /invalid Svc-Failure-Callback/],
    [{ 'svc-callback-retries': '1' }, /Svc-Callback-Retries requires Svc-Callback/],
    [
      { 'svc-failure-callback-method': 'PUT' },
      /Svc-Failure-Callback-Method requires Svc-Failure-Callback/,
    ],
    [
      { 'svc-callback': 'https://a.example', 'svc-callback-method': 'FETCH' },
      /invalid Svc-Callback-Method "FETCH"/,
    ],
    [
      { 'svc-callback': 'https://a.example', 'svc-callback-retries': '99' },
      /Svc-Callback-Retries "99" is more than the plan's max_retries/,
    ],
    [
      { 'svc-callback': 'https://a.example', 'svc-callback-delay': '30d' },
      /Svc-Callback-Delay "30d" is more than the plan's max_delay/,
    ],
    [
      { 'svc-callback': 'https://a.example', 'svc-callback-timeout': '0' },
      /invalid Svc-Callback-Timeout "0"/,
    ],
    [
      { 'svc-callback': 'https://a.example', 'svc-callback-retry-delay': 'eval(1)' },
      /Svc-Callback-Retry-Delay/,
    ],
    [
      { 'svc-callback': 'https://a.example', 'svc-callback-forward-bad name': 'x' },
      /invalid header name "Svc-Callback-Forward-Bad Name"/i,
    ],
  ])('%o is refused: %s', (headers, pattern) => {
    expect(() => parsePublishSettings({ ...base, headers })).toThrow(pattern);
  });

  it.each(['Callback', 'Failure-Callback'])(
    'drops hop-by-hop headers forwarded to the %s silently (the SDK forwards them all)',
    (kind) => {
      const lower = `svc-${kind.toLowerCase()}`;
      const headers = {
        [lower]: 'https://a.example/cb',
        [`${lower}-forward-connection`]: 'keep-alive',
        [`${lower}-forward-host`]: 'endpoint.example',
        [`${lower}-forward-content-length`]: '12',
        [`${lower}-forward-transfer-encoding`]: 'chunked',
        [`${lower}-forward-x-kept`]: 'yes',
      };
      const settings = parsePublishSettings({ ...base, headers });
      const spec = kind === 'Callback' ? settings.callback : settings.failureCallback;
      expect(spec?.headers).toEqual({ 'X-Kept': ['yes'] });
    },
  );

  it('still ignores unknown settings such as SDK telemetry', () => {
    const headers = { 'svc-telemetry-sdk': 'x' };
    expect(() => parsePublishSettings({ ...base, headers })).not.toThrow();
  });
});

describe('Svc-Redact-Fields', () => {
  const base = { prefix: 'Svc', query: new URLSearchParams(), plan: DEFAULT_PLANS.paid, now: 0 };
  it.each([
    ['body', { body: true }],
    ['header', { headers: true }],
    ['headers', { headers: true }],
    [
      'Body, header[Authorization], header[x-api-KEY]',
      { body: true, headers: ['authorization', 'x-api-key'] },
    ],
    ['header[Authorization], headers', { headers: true }],
    [' , ', undefined],
  ])('%o parses to %o', (value, expected) => {
    const settings = parsePublishSettings({ ...base, headers: { 'svc-redact-fields': value } });
    expect(settings.redact).toEqual(expected);
  });

  it.each(['bodies', 'header[]', 'header[bad name]', 'header[a'])(
    '%o is a 400 naming it',
    (value) => {
      expect(() =>
        parsePublishSettings({ ...base, headers: { 'svc-redact-fields': value } }),
      ).toThrow(/invalid Svc-Redact-Fields/);
    },
  );
});

describe('URL group default headers', () => {
  const base = { prefix: 'Svc', query: new URLSearchParams(), plan: DEFAULT_PLANS.paid, now: 0 };

  it('apply as if the publisher had sent them', () => {
    const settings = parsePublishSettings({
      ...base,
      headers: {},
      defaults: {
        'Svc-Retries': ['2'],
        'Svc-Forward-X-A': ['a'],
        'X-Plain': ['p1', 'p2'],
        'Content-Type': ['text/csv'],
      },
    });
    expect(settings.retries).toBe(2);
    expect(settings.headers).toEqual({
      'Content-Type': ['text/csv'],
      'X-A': ['a'],
      'X-Plain': ['p1', 'p2'],
    });
  });

  it('lose to a header or query parameter of the publish with the same name', () => {
    const settings = parsePublishSettings({
      ...base,
      headers: {
        'svc-retries': '4',
        'content-type': 'application/json',
        'svc-forward-x-plain': 'mine',
      },
      query: new URLSearchParams('svc-method=PUT'),
      defaults: {
        'Svc-Retries': ['2'],
        'Svc-Method': ['DELETE'],
        'Content-Type': ['text/csv'],
        'X-Plain': ['default'],
      },
    });
    expect(settings.retries).toBe(4);
    expect(settings.method).toBe('PUT');
    expect(settings.headers).toEqual({ 'Content-Type': ['application/json'], 'X-Plain': ['mine'] });
  });

  it('Svc-Header-Forward as a default forwards the incoming headers, which win over plain defaults', () => {
    const settings = parsePublishSettings({
      ...base,
      headers: { 'x-github-event': 'push', 'x-plain': 'incoming', authorization: 'Bearer t' },
      defaults: { 'Svc-Header-Forward': ['true'], 'X-Plain': ['default'], 'X-Only-Default': ['d'] },
    });
    expect(settings.headerForward).toBe(true);
    expect(settings.headers).toEqual({
      'X-Github-Event': ['push'],
      'X-Plain': ['incoming'],
      'X-Only-Default': ['d'],
    });
  });

  it('read as stored: a duration with units out of order or repeated, accepted before 2026-11-28, still applies', () => {
    const defaults = { 'Svc-Delay': ['30m1h'], 'Svc-Timeout': ['1s1s'] };
    const settings = parsePublishSettings({ ...base, headers: {}, defaults });
    expect(settings.notBefore).toBe(90 * 60_000);
    expect(settings.timeoutMs).toBe(2_000);
    // The publish's own headers are new input, read strictly; so are defaults being set.
    expect(() =>
      parsePublishSettings({ ...base, headers: { 'svc-delay': '30m1h' }, defaults }),
    ).toThrow(/invalid Svc-Delay "30m1h"/);
    expect(() =>
      parsePublishSettings({ ...base, headers: {}, defaults, newDefaults: true }),
    ).toThrow(/invalid Svc-Delay "30m1h"/);
  });

  it('read as stored: a flow-control key ".." set before 2026-11-28 still applies', () => {
    const defaults = { 'Svc-Flow-Control-Key': ['..'], 'Svc-Flow-Control-Value': ['rate=5'] };
    const settings = parsePublishSettings({ ...base, headers: {}, defaults });
    expect(settings.flowControl?.key).toBe('..');
    expect(() =>
      parsePublishSettings({ ...base, headers: {}, defaults, newDefaults: true }),
    ).toThrow(/invalid Svc-Flow-Control-Key "\.\."/);
  });

  it('a bad default is reported like a bad header', () => {
    expect(() =>
      parsePublishSettings({ ...base, headers: {}, defaults: { 'Svc-Retries': ['many'] } }),
    ).toThrow(/invalid Svc-Retries "many"/);
  });
});

describe('a setting sent with no value', () => {
  // A header map may hold an empty list (a batch entry's or a URL group's headers): the setting
  // is present and empty, and refused as such, not taken as absent.
  it.each([
    ['svc-retries', /invalid Svc-Retries ""/],
    ['svc-method', /invalid Svc-Method ""/],
    ['svc-callback', /invalid Svc-Callback ""/],
  ])('%s: [] is refused naming the setting', (name, message) => {
    expect(() => parse({ headers: { [name]: [] } })).toThrow(message);
  });
});

describe('settings stored before, read again (a schedule tick)', () => {
  it('reads durations with units in any order or repeated, as they were accepted then', () => {
    const settings = parsePublishSettings({
      prefix: 'Svc',
      headers: { 'svc-delay': '30m1h', 'svc-timeout': '1m1m' },
      query: new URLSearchParams(),
      plan: PAID,
      now: NOW,
      stored: true,
    });
    expect(settings.notBefore).toBe(NOW + 90 * 60_000);
    expect(settings.timeoutMs).toBe(120_000);
  });

  it('reads a flow-control key "." or "..", which a new publish may not create', () => {
    for (const key of ['.', '..']) {
      const headers = { 'svc-flow-control-key': key, 'svc-flow-control-value': 'parallelism=1' };
      const read = (stored: boolean) =>
        parsePublishSettings({
          prefix: 'Svc',
          headers,
          query: new URLSearchParams(),
          plan: PAID,
          now: NOW,
          stored,
        });
      expect(read(true).flowControl?.key).toBe(key);
      expect(() => read(false)).toThrow(`invalid Svc-Flow-Control-Key "${key}": "." and ".."`);
    }
  });
});
