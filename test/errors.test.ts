/** Client mistakes get a 4xx with `{"error"}` naming the problem; never a 5xx, never a crash. */
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STORAGES, startFerry, type TestFerry } from './helpers/ferry.js';
import { createMgmtUser, type MgmtUser } from './helpers/mgmt.js';
import { newDlqId, newMessageId } from '../src/core/ids.js';
import type { DlqEntry, Message } from '../src/core/types.js';

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
    [
      'delay with a repeated unit',
      { 'Svc-Delay': '1d1d' },
      /Svc-Delay "1d1d": unit "d" is repeated/,
    ],
    [
      'delay with units out of order',
      { 'Svc-Delay': '1s1m' },
      /Svc-Delay "1s1m".*order d, h, m, s/,
    ],
  ];
  for (const [name, headers, pattern] of cases) {
    it(`400 for ${name}`, async () => {
      await expectError(await publish(t, 'https://example.com/x', headers), 400, pattern);
    });
  }

  it('400 for a destination URL whose host is missing or would be read as another', async () => {
    await expectError(await publish(t, 'http:///path'), 400, /"http:\/\/\/path": missing host/);
    await expectError(await publish(t, 'https:////x'), 400, /missing host/);
    // fetch would turn the backslash into a slash: send the request line as the audit did.
    const raw = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = httpRequest(
        `${t.url}/`,
        {
          method: 'POST',
          path: '/v2/publish/http://127.0.0.1:18642\\bs2',
          headers: { authorization: `Bearer ${t.token}` },
        },
        (res) => {
          let body = '';
          res.on('data', (chunk: Buffer) => (body += chunk.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        },
      );
      req.on('error', reject);
      req.end('x');
    });
    expect(raw.status).toBe(400);
    expect(raw.body).toMatch(/backslash in the host part/);
    // Encoded characters and the destination's own query are still delivered as written.
    const ok = await publish(t, 'https://example.com/a%2Fb%00c?x=%E2%82%AC&y');
    expect(ok.status).toBe(200);
    const { messageId } = (await ok.json()) as { messageId: string };
    const got = (await (await t.api(`/v2/messages/${messageId}`)).json()) as { url: string };
    expect(got.url).toBe('https://example.com/a%2Fb%00c?x=%E2%82%AC&y');
  });

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

  it('400 naming a parameter given twice where one is taken', async () => {
    for (const path of ['/v2/events', '/v2/dlq', '/v2/messages']) {
      await expectError(await t.api(`${path}?count=1&count=2`), 400, /"count" is given 2 times/);
    }
    await expectError(await t.api('/v2/events?fromDate=1&fromDate=2'), 400, /"fromDate" is given/);
    // Multi-value filters still take repeats (OR within a field).
    expect((await t.api('/v2/events?label=a&label=b')).status).toBe(200);
    expect((await t.api('/v2/dlq?dlqIds=dlq_a&dlqIds=dlq_b')).status).toBe(200);
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

/**
 * U+0000 in ids, filters, cursors and JSON text fields: PostgreSQL refuses it in text
 * (`invalid byte sequence for encoding "UTF8": 0x00`), which was a 500 on every route that passed
 * one through. Each must be a 4xx naming where the NUL was, on both storages.
 */
describe.each(STORAGES)('NUL characters in client input (%s)', (storage) => {
  let s: TestFerry;
  let admin: MgmtUser;
  beforeAll(async () => {
    s = await startFerry({ engine: false, storage });
    admin = await createMgmtUser(s, true);
  });
  afterAll(async () => {
    await s.close();
  });

  const PATHS: [string, string][] = [
    ['GET', '/v2/messages/%00'],
    ['DELETE', '/v2/messages/%00'],
    ['GET', '/v2/messages/a%00b'],
    ['GET', '/v2/messages?messageId=%00'],
    ['GET', '/v2/messages?label=%00'],
    ['DELETE', '/v2/messages?label=%00'],
    ['GET', '/v2/messages?url=%00'],
    ['GET', '/v2/messages?cursor=%00'],
    ['GET', '/v2/events?messageId=%00'],
    ['GET', '/v2/events?label=%00'],
    ['GET', '/v2/events?url=%00'],
    ['GET', '/v2/events?topicName=%00'],
    ['GET', '/v2/events?host=%00'],
    ['GET', '/v2/events?path=%00'],
    ['GET', '/v2/dlq/%00'],
    ['DELETE', '/v2/dlq/%00'],
    ['POST', '/v2/dlq/retry/%00'],
    ['GET', '/v2/dlq?dlqIds=%00'],
    ['GET', '/v2/dlq?label=%00'],
    ['GET', '/v2/dlq?cursor=%00'],
    ['DELETE', '/v2/dlq?cursor=%00'],
    ['DELETE', '/v2/dlq?label=%00'],
    ['GET', '/v2/schedules/%00'],
    ['DELETE', '/v2/schedules/%00'],
    ['POST', '/v2/schedules/%00/pause'],
    ['PATCH', '/v2/schedules/%00/resume'],
    ['GET', '/v2/topics/%00'],
    ['GET', '/v2/queues/%00'],
    ['DELETE', '/v2/queues/%00'],
    ['POST', '/v2/queues/%00/pause'],
    ['GET', '/v2/flowControl/%00'],
    ['POST', '/v2/flowControl/%00/pause'],
    ['POST', '/v2/flowControl/%00/resetRate'],
    ['POST', '/v2/flowControl/%00/pin?parallelism=1'],
    ['GET', '/v2/flowControl?search=%00'],
    ['GET', '/v2/workflows/runs/%00'],
    ['DELETE', '/v2/workflows/runs/%00'],
    ['DELETE', '/v2/workflows/runs?workflowRunIds=%00'],
    ['GET', '/v2/workflows/logs?workflowRunId=%00'],
    ['GET', '/v2/workflows/dlq/%00'],
    ['POST', '/v2/workflows/dlq/resume/%00'],
    ['POST', '/v2/workflows/dlq/restart/%00'],
    ['POST', '/v2/workflows/dlq/resume?dlqIds=%00'],
    ['POST', '/v2/workflows/dlq/callback/%00'],
    ['POST', '/v2/wait/%00'],
    ['POST', '/v2/notify/%00'],
    ['POST', '/v2/notify/wfr_x/%00'],
    ['GET', '/v2/waiters/%00'],
    ['POST', '/v2/publish/https://example.com/n?svc-label=%00'],
    ['POST', '/v2/publish/https://example.com/n?svc-deduplication-id=%00'],
    [
      'POST',
      '/v2/publish/https://example.com/n?svc-flow-control-key=%00&svc-flow-control-value=parallelism%3D1',
    ],
  ];

  it('answers a NUL in a path id, a filter or a cursor with a 4xx naming it', async () => {
    const failures: string[] = [];
    for (const [method, path] of PATHS) {
      const res = await s.api(path, { method, body: method === 'GET' ? undefined : 'x' });
      const body = (await res.json()) as { error?: string };
      if (res.status >= 500 || res.status < 400)
        failures.push(`${method} ${path} -> ${res.status} ${body.error}`);
    }
    const hook = await fetch(`${s.url}/v2/workflows/hooks/%00/%00/%00`, { method: 'POST' });
    if (hook.status !== 400) failures.push(`hook -> ${hook.status}`);
    for (const path of ['/v2/queue/%00', '/v2/queue/stats/%00', '/v2/search/%00']) {
      const res = await admin.api(path);
      if (res.status !== 400) failures.push(`mgmt ${path} -> ${res.status}`);
    }
    expect(failures).toEqual([]);
    await expectError(await s.api('/v2/messages/a%00b'), 400, /path parameter "id".*NUL/);
    await expectError(await s.api('/v2/events?label=%00'), 400, /query parameter "label".*NUL/);
  });

  it('refuses NUL in JSON fields stored as text, naming the field', async () => {
    const json = (body: unknown): RequestInit => ({
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    await expectError(
      await s.api(
        '/v2/topics/t/endpoints',
        json({ endpoints: [{ url: 'https://h.example/a\u0000b' }] }),
      ),
      400,
      /endpoints\[0\]\.url/,
    );
    await expectError(
      await s.api(
        '/v2/topics/t/endpoints',
        json({ endpoints: [{ url: 'https://h.example/a', name: 'a\u0000' }] }),
      ),
      400,
      /endpoints\[0\]\.name/,
    );
    await expectError(
      await s.api(
        '/v2/batch',
        json([{ destination: 'https://h.example/b', headers: { 'Svc-Label': 'a\u0000' } }]),
      ),
      400,
      /invalid entry 0\.headers\.Svc-Label: contains a NUL/,
    );
    await expectError(
      await s.api(
        '/v2/topics/t/endpoints',
        json({ endpoints: [{ url: 'https://h.example/a\nb' }] }),
      ),
      400,
      /control characters/,
    );
    const wait = await s.api(
      '/v2/wait/ev',
      json({ url: 'https://h.example/w', timeout: '1h', step: { a: '\u0000' } }),
    );
    expect(wait.status).toBeGreaterThanOrEqual(400);
    expect(wait.status).toBeLessThan(500);
    await expectError(
      await admin.api('/v2/admin/users', json({ email: 'a\u0000@b.com' })),
      400,
      /email/,
    );
    // Publishing to the group still works: the bad endpoint was never stored.
    const ok = await s.api(
      '/v2/topics/t/endpoints',
      json({ endpoints: [{ url: 'https://h.example/a' }] }),
    );
    expect(ok.status).toBe(200);
    expect((await s.api('/v2/publish/t', { method: 'POST', body: 'x' })).status).toBe(200);
  });

  it('still stores and returns a message body that holds NUL bytes', async () => {
    const bytes = Buffer.from([0x61, 0x00, 0x62]);
    const res = await s.api('/v2/publish/https://example.com/nul', { method: 'POST', body: bytes });
    expect(res.status).toBe(200);
    const { messageId } = (await res.json()) as { messageId: string };
    const got = (await (await s.api(`/v2/messages/${messageId}`)).json()) as { body?: string };
    expect(got.body).toBe('a\u0000b');
    const batch = await s.api('/v2/batch', {
      method: 'POST',
      body: JSON.stringify([{ destination: 'https://example.com/nb', body: 'a\u0000b' }]),
    });
    expect(batch.status).toBe(200);
  });
});

/**
 * docs/api.md promises a 400 for a malformed cursor. The DLQ and message lists passed any text to
 * storage, which compared it with ids as text: `DELETE /v2/dlq?cursor=garbage` deleted from the
 * first page, `POST /v2/dlq/retry?cursor=garbage` retried it.
 */
describe.each(STORAGES)('malformed cursors (%s)', (storage) => {
  let s: TestFerry;
  beforeAll(async () => {
    s = await startFerry({ engine: false, storage });
  });
  afterAll(async () => {
    await s.close();
  });

  async function storeDlqEntries(n: number): Promise<void> {
    const now = Date.now();
    const entries: DlqEntry[] = [];
    for (let i = 0; i < n; i++) {
      const message: Message = {
        id: newMessageId(now + i),
        accountId: s.account.id,
        url: 'https://example.com/hook',
        callerIp: '127.0.0.1',
        retried: 0,
        maxRetries: 0,
        notBefore: now + i,
        createdAt: now + i,
        dueAt: now + i,
        spec: { method: 'POST', headers: {} },
        body: Buffer.from('x'),
      };
      entries.push({
        dlqId: newDlqId(now + i),
        message,
        createdAt: now + i,
        expiresAt: now + 86_400_000,
      });
    }
    await s.ferry.driver.executor.dlqInsertMany({ entries });
  }

  it('answers 400 and neither deletes nor retries anything', async () => {
    await storeDlqEntries(3);
    for (const cursor of ['garbage', 'msg_0mx0', 'dlq_a b', '1']) {
      const q = `cursor=${encodeURIComponent(cursor)}`;
      await expectError(await s.api(`/v2/dlq?${q}`), 400, /invalid cursor/);
      await expectError(await s.api(`/v2/dlq?${q}`, { method: 'DELETE' }), 400, /invalid cursor/);
      await expectError(
        await s.api(`/v2/dlq/retry?${q}`, { method: 'POST' }),
        400,
        /invalid cursor/,
      );
    }
    await expectError(await s.api('/v2/messages?cursor=garbage'), 400, /invalid cursor "garbage"/);
    await expectError(await s.api('/v2/messages?cursor=dlq_x'), 400, /invalid cursor/);
    const listed = (await (await s.api('/v2/dlq')).json()) as { messages: unknown[] };
    expect(listed.messages).toHaveLength(3);
    // A cursor the previous page gave still continues the list.
    const first = (await (await s.api('/v2/dlq?count=2')).json()) as { cursor: string };
    const next = (await (await s.api(`/v2/dlq?count=2&cursor=${first.cursor}`)).json()) as {
      messages: unknown[];
    };
    expect(next.messages).toHaveLength(1);
    expect((await s.api(`/v2/messages?cursor=${newMessageId()}`)).status).toBe(200);
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
