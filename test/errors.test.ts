/** Client mistakes get a 4xx with `{"error"}` naming the problem; never a 5xx, never a crash. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFerry, type TestFerry } from './helpers/ferry.js';

let t: TestFerry;
let free: TestFerry;

beforeAll(async () => {
  t = await startFerry({ engine: false });
  free = await startFerry({ engine: false, plan: 'free' });
});
afterAll(async () => {
  await t.close();
  await free.close();
});

async function expectError(res: Response, status: number, pattern: RegExp): Promise<void> {
  const body = (await res.json()) as { error?: string };
  expect(res.status).toBe(status);
  expect(body.error).toMatch(pattern);
}

const publish = (
  f: TestFerry,
  path: string,
  headers: Record<string, string> = {},
  body: string | Buffer = 'x',
) => f.api(`/v2/publish/${path}`, { method: 'POST', headers, body });

describe('authentication', () => {
  it('401 without a token, with a wrong token, and with a malformed one', async () => {
    await expectError(
      await fetch(`${t.url}/v2/publish/https://example.com`, { method: 'POST' }),
      401,
      /token/,
    );
    const wrong = Buffer.from(JSON.stringify({ UserID: t.account.id, Password: 'nope' })).toString(
      'base64',
    );
    await expectError(
      await fetch(`${t.url}/v2/messages/msg_x`, { headers: { authorization: `Bearer ${wrong}` } }),
      401,
      /invalid token/,
    );
    await expectError(
      await fetch(`${t.url}/v2/events`, { headers: { authorization: 'Bearer !!!' } }),
      401,
      /invalid token/,
    );
  });

  it('uses queue_token when the Authorization header is a webhook sender’s own (not Bearer)', async () => {
    const q = encodeURIComponent(t.token);
    const res = await fetch(`${t.url}/v2/events?queue_token=${q}`, {
      headers: { authorization: 'Basic c2VuZGVyOnNlY3JldA==' },
    });
    expect(res.status).toBe(200);
  });

  it('accepts queue_token and qstash_token in the query of every messaging list', async () => {
    const q = encodeURIComponent(t.token);
    const lists = [
      '/v2/events',
      '/v2/logs',
      '/v2/dlq',
      '/v2/queues',
      '/v2/flowControl',
      '/v2/globalParallelism',
      '/v2/keys',
      '/v2/schedules',
      '/v2/topics',
      '/v2/workflows/logs',
      '/v2/workflows/events',
      '/v2/workflows/dlq',
    ];
    for (const path of lists) {
      for (const param of ['queue_token', 'qstash_token']) {
        const res = await fetch(`${t.url}${path}?${param}=${q}`);
        expect({ path, param, status: res.status }).toEqual({ path, param, status: 200 });
      }
    }
  });
});

describe('publish validation', () => {
  const cases: [string, Record<string, string>, RegExp][] = [
    ['bad delay', { 'Svc-Delay': '10 parsecs' }, /Svc-Delay/i],
    ['bad timeout', { 'Svc-Timeout': 'soon' }, /Svc-Timeout/i],
    ['non-numeric retries', { 'Svc-Retries': 'many' }, /Svc-Retries/i],
    ['negative retries', { 'Svc-Retries': '-1' }, /Svc-Retries/i],
    ['bad retry-delay expression', { 'Svc-Retry-Delay': 'process.exit(1)' }, /Svc-Retry-Delay/i],
    ['unknown function in expression', { 'Svc-Retry-Delay': 'foo(1)' }, /foo/],
    ['bad method', { 'Svc-Method': 'BREW' }, /Svc-Method/i],
    ['bad not-before', { 'Svc-Not-Before': 'tomorrow' }, /Svc-Not-Before/i],
    [
      'bad content-based dedup flag',
      { 'Svc-Content-Based-Deduplication': 'maybe' },
      /Content-Based-Deduplication/i,
    ],
    ['flow-control key without value', { 'Svc-Flow-Control-Key': 'k' }, /Flow-Control/i],
  ];
  for (const [name, headers, pattern] of cases) {
    it(`400 for ${name}`, async () => {
      await expectError(await publish(t, 'https://example.com/x', headers), 400, pattern);
    });
  }

  it('400 for a destination that is neither a URL nor a group name', async () => {
    await expectError(await publish(t, 'ftp://example.com/x'), 400, /destination/);
    await expectError(await publish(t, 'http://'), 400, /destination|URL/i);
  });

  it('404 for a URL group that does not exist', async () => {
    await expectError(await publish(t, 'no-such-group'), 404, /no-such-group/);
  });

  it('412 for retries above the plan maximum, naming the limit', async () => {
    await expectError(
      await publish(free, 'https://example.com', { 'Svc-Retries': '4' }),
      412,
      /max_retries/,
    );
    expect((await publish(free, 'https://example.com', { 'Svc-Retries': '3' })).status).toBe(200);
  });

  it('412 for a delay beyond max_delay', async () => {
    await expectError(
      await publish(free, 'https://example.com', { 'Svc-Delay': '8d' }),
      412,
      /max_delay/,
    );
  });

  it('413 for a body over max_message_size', async () => {
    const big = Buffer.alloc(1024 * 1024 + 1, 97);
    await expectError(await publish(free, 'https://example.com', {}, big), 413, /max_message_size/);
    const tooBigForAnyPlan = Buffer.alloc(10 * 1024 * 1024 + 1, 97);
    await expectError(
      await publish(t, 'https://example.com', {}, tooBigForAnyPlan),
      413,
      /max_message_size/,
    );
  });

  it('400 for a bad callback URL, callback settings without a URL, and bad redaction lists', async () => {
    await expectError(
      await publish(t, 'https://example.com', { 'Svc-Callback': 'mailto:me@example.com' }),
      400,
      /invalid Svc-Callback "mailto:me@example.com": expected an http:\/\/ or https:\/\/ URL/,
    );
    await expectError(
      await publish(t, 'https://example.com', { 'Svc-Failure-Callback-Retries': '1' }),
      400,
      /Svc-Failure-Callback-Retries requires Svc-Failure-Callback/,
    );
    await expectError(
      await publish(t, 'https://example.com', { 'Svc-Redact-Fields': 'body, secrets' }),
      400,
      /invalid Svc-Redact-Fields "body, secrets": unknown field "secrets"/,
    );
  });

  it('uses the plan default retries when Svc-Retries is absent (free 3, paid 5)', async () => {
    const a = (await (await publish(free, 'https://example.com/a')).json()) as {
      messageId: string;
    };
    const b = (await (await publish(t, 'https://example.com/b')).json()) as { messageId: string };
    const ma = (await (await free.api(`/v2/messages/${a.messageId}`)).json()) as {
      maxRetries: number;
    };
    const mb = (await (await t.api(`/v2/messages/${b.messageId}`)).json()) as {
      maxRetries: number;
    };
    expect([ma.maxRetries, mb.maxRetries]).toEqual([3, 5]);
  });
});

describe('other endpoints', () => {
  it('400 for an unknown filter parameter', async () => {
    await expectError(await t.api('/v2/events?labeel=x'), 400, /labeel/);
    await expectError(await t.api('/v2/dlq?nope=1'), 400, /nope/);
    await expectError(await t.api('/v2/messages?labeel=x', { method: 'DELETE' }), 400, /labeel/);
  });

  it('400 for a bad state or count', async () => {
    await expectError(await t.api('/v2/events?state=SLEEPING'), 400, /state/);
    await expectError(await t.api('/v2/events?count=5000'), 400, /count/);
    await expectError(await t.api('/v2/dlq?count=abc'), 400, /count/);
  });

  it('404 for unknown messages, DLQ entries and endpoints', async () => {
    await expectError(await t.api('/v2/messages/msg_nope'), 404, /msg_nope/);
    await expectError(await t.api('/v2/messages/msg_nope', { method: 'DELETE' }), 404, /msg_nope/);
    await expectError(await t.api('/v2/dlq/dlq_nope'), 404, /dlq_nope/);
    await expectError(await t.api('/v2/dlq/dlq_nope', { method: 'DELETE' }), 404, /dlq_nope/);
    await expectError(await t.api('/v2/dlq/retry/dlq_nope', { method: 'POST' }), 404, /dlq_nope/);
    await expectError(await t.api('/v2/nothing-here'), 404, /nothing-here/);
  });

  it('405 with Allow for a known path and the wrong method', async () => {
    const res = await t.api('/v2/keys', { method: 'DELETE' });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET');
    await expectError(res, 405, /DELETE not allowed/);
    const publish = await t.api('/v2/publish/https://example.com', { method: 'GET' });
    expect(publish.status).toBe(405);
  });

  it('405 names each allowed method once, in the text and in Allow', async () => {
    // Two routes match this path with POST (`/v2/schedules/:id/pause` and the create route's
    // `/v2/schedules/*`): it was "allowed: POST, POST, PATCH".
    const res = await t.api('/v2/schedules/s1/pause', { method: 'GET' });
    const { error } = (await res.json()) as { error: string };
    const listed = /\(allowed: (.*)\)$/.exec(error)?.[1]?.split(', ') ?? [];
    expect(listed.length).toBeGreaterThan(0);
    expect(listed).toEqual([...new Set(listed)]);
    expect(res.headers.get('allow')).toBe(listed.join(', '));
  });

  it('never lets one account see another account’s message', async () => {
    const { messageId } = (await (await publish(t, 'https://example.com/mine')).json()) as {
      messageId: string;
    };
    expect((await free.api(`/v2/messages/${messageId}`)).status).toBe(404);
    expect((await free.api(`/v2/messages/${messageId}`, { method: 'DELETE' })).status).toBe(404);
    expect((await t.api(`/v2/messages/${messageId}`)).status).toBe(200);
  });
});

describe('JSON bodies of the messaging API refuse fields they do not know', () => {
  const post = (path: string, body: unknown, method = 'POST') =>
    t.api(path, { method, body: JSON.stringify(body) });

  it('the queue upsert: a misspelt field, a null, Infinity', async () => {
    await expectError(
      await post('/v2/queues', { queueName: 'typo', paralelism: 5, pasued: true }),
      400,
      /^body: unknown field "paralelism" \(allowed: queueName, parallelism, paused\)$/,
    );
    await expectError(
      await post('/v2/queues', { queueName: 'typo', parallelism: null }),
      400,
      /^body\.parallelism: /,
    );
    await expectError(
      await t.api('/v2/queues', {
        method: 'POST',
        body: '{"queueName":"typo","parallelism":1e400}',
      }),
      400,
      /^body\.parallelism: must be <= /,
    );
    expect((await t.api('/v2/queues/typo')).status).toBe(404);
    // What the SDKs send still works.
    const ok = await post('/v2/queues', { queueName: 'typo', parallelism: 2, paused: false });
    expect(ok.status).toBe(200);
  });

  it('URL-group endpoints and default headers', async () => {
    await expectError(
      await post('/v2/topics/billing/endpoints', {
        endpoints: [{ url: 'https://example.com/a', nmae: 'billing' }],
      }),
      400,
      /^body\.endpoints\.0: unknown field "nmae" \(allowed: url, name\)$/,
    );
    await expectError(
      await post('/v2/topics/billing/endpoints', { endpoints: [], extra: 1 }),
      400,
      /unknown field "extra"/,
    );
    await expectError(
      await post('/v2/topics/billing', { header: {} }, 'PATCH'),
      400,
      /unknown field "header"/,
    );
    expect((await t.api('/v2/topics/billing')).status).toBe(404);
  });

  it('batch entries, named by position', async () => {
    await expectError(
      await post('/v2/batch', [
        { destination: 'https://example.com/a' },
        { destination: 'https://example.com/b', tpye: 'x' },
      ]),
      400,
      /^entry 1: unknown field "tpye" \(allowed: destination, body, headers, queue\)$/,
    );
  });

  it('the workflow wait body', async () => {
    await expectError(
      await post('/v2/wait/evt_1', { url: 'https://example.com', timeout: 1, step: {}, urll: 'x' }),
      400,
      /unknown field "urll"/,
    );
  });
});
