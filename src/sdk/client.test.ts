/**
 * Request-shape tests: a fake server on 127.0.0.1 records exactly what the client sends and
 * answers canned responses. Behaviour against the real server is covered by end-to-end tests.
 */
import { createServer } from 'node:http';
import type { IncomingHttpHeaders, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FerryApiError, FerryClient } from './index.js';

interface Recorded {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
}
interface Canned {
  status: number;
  body: string;
  headers?: Record<string, string>;
}

let server: Server;
let baseUrl: string;
let recorded: Recorded[] = [];
let replies: Canned[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      recorded.push({
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks),
      });
      const reply = replies.shift() ?? { status: 200, body: '{}' };
      res.writeHead(reply.status, { 'content-type': 'application/json', ...reply.headers });
      res.end(reply.body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

beforeEach(() => {
  recorded = [];
  replies = [];
});

const reply = (status: number, body: unknown, headers?: Record<string, string>): void => {
  replies.push({ status, body: typeof body === 'string' ? body : JSON.stringify(body), headers });
};
const last = (): Recorded => {
  const r = recorded.at(-1);
  if (r === undefined) throw new Error('no request recorded');
  return r;
};
/** The `<prefix>-*` headers of a request (node lowercases names). */
const prefixed = (r: Recorded, prefix: string): Record<string, unknown> =>
  Object.fromEntries(Object.entries(r.headers).filter(([name]) => name.startsWith(prefix)));

const client = (): FerryClient => new FerryClient({ baseUrl: `${baseUrl}/`, token: 'tok_123' });

describe('FerryClient.publish', () => {
  it('sends the destination raw in the path, its query kept, every option as a header', async () => {
    reply(200, { messageId: 'msg_1', deduplicated: false });
    const body = Uint8Array.from([0, 1, 2, 255, 254, 10]);
    const res = await client().publish({
      destination: 'https://example.com/hook?a=1&b=x%20y',
      body,
      contentType: 'application/octet-stream',
      headers: { 'X-Custom': 'c1', 'Svc-Inner': 'kept' },
      method: 'PUT',
      delay: 10,
      notBefore: 1_900_000_000,
      retries: 2,
      retryDelay: '1000 * pow(2, retried)',
      timeout: '30s',
      label: ['a', 'b'],
      deduplicationId: 'dedup-1',
      contentBasedDeduplication: true,
      flowControl: { key: 'fk', parallelism: 2, rate: 10, period: 60 },
      headerForward: true,
      rawHeaders: { 'X-Raw': 'r' },
    });

    expect(res).toEqual({ messageId: 'msg_1', deduplicated: false });
    const r = last();
    expect(r.method).toBe('POST');
    expect(r.url).toBe('/v2/publish/https://example.com/hook?a=1&b=x%20y');
    expect(r.headers.authorization).toBe('Bearer tok_123');
    expect(r.headers['content-type']).toBe('application/octet-stream');
    expect(r.headers['x-raw']).toBe('r');
    expect(prefixed(r, 'svc-')).toEqual({
      'svc-forward-x-custom': 'c1',
      'svc-forward-svc-inner': 'kept',
      'svc-method': 'PUT',
      'svc-delay': '10s',
      'svc-not-before': '1900000000',
      'svc-retries': '2',
      'svc-retry-delay': '1000 * pow(2, retried)',
      'svc-timeout': '30s',
      'svc-label': 'a,b',
      'svc-deduplication-id': 'dedup-1',
      'svc-content-based-deduplication': 'true',
      'svc-flow-control-key': 'fk',
      'svc-flow-control-value': 'parallelism=2, rate=10, period=60s',
      'svc-header-forward': 'true',
    });
    expect(new Uint8Array(r.body)).toEqual(body);
  });

  it('sends only what was asked for, with the configured prefix', async () => {
    reply(200, { messageId: 'msg_2' });
    const c = new FerryClient({ baseUrl, token: 't', headerPrefix: 'Upstash' });
    await c.publish({
      destination: 'https://example.com/',
      body: 'hi',
      headers: { A: '1' },
      delay: '1d2h',
      label: 'one',
      flowControl: { key: 'k', rate: 5 },
    });
    const r = last();
    expect(r.url).toBe('/v2/publish/https://example.com/');
    expect(prefixed(r, 'svc-')).toEqual({});
    expect(prefixed(r, 'upstash-')).toEqual({
      'upstash-forward-a': '1',
      'upstash-delay': '1d2h',
      'upstash-label': 'one',
      'upstash-flow-control-key': 'k',
      'upstash-flow-control-value': 'rate=5',
    });
    expect(r.body.toString('utf8')).toBe('hi');
  });

  it('lets a raw header override a built one regardless of case', async () => {
    reply(200, { messageId: 'msg_3' });
    await client().publish({
      destination: 'https://example.com/',
      retries: 1,
      rawHeaders: { 'SVC-RETRIES': '4', authorization: 'Bearer other' },
    });
    expect(last().headers['svc-retries']).toBe('4');
    expect(last().headers.authorization).toBe('Bearer other');
  });

  it('returns one result per endpoint for a URL group, and a 202 duplicate', async () => {
    const group = [
      { messageId: 'msg_a', url: 'https://a.example/' },
      { messageId: 'msg_b', url: 'https://b.example/', deduplicated: true },
    ];
    reply(200, group);
    await expect(client().publish({ destination: 'my-group', body: 'x' })).resolves.toEqual(group);
    expect(last().url).toBe('/v2/publish/my-group');

    reply(202, { messageId: 'msg_old', deduplicated: true });
    await expect(
      client().publish({ destination: 'https://example.com/', deduplicationId: 'd' }),
    ).resolves.toEqual({ messageId: 'msg_old', deduplicated: true });
  });

  it('publishJSON encodes the body and sets the JSON content type', async () => {
    reply(200, { messageId: 'msg_4' });
    await client().publishJSON({ destination: 'https://example.com/', body: { n: 1, s: 'é' } });
    expect(last().headers['content-type']).toBe('application/json');
    expect(last().body.toString('utf8')).toBe('{"n":1,"s":"é"}');
  });

  it('rejects locally what would be sent wrong', async () => {
    await expect(client().publish({ destination: '' })).rejects.toThrow(TypeError);
    await expect(
      client().publish({ destination: 'https://example.com/', flowControl: { key: 'k' } }),
    ).rejects.toThrow(/parallelism or rate/);
    expect(recorded).toHaveLength(0);
  });
});

describe('FerryClient.messages', () => {
  it('gets and cancels one message by its encoded id', async () => {
    const msg = { messageId: 'msg_1', url: 'https://e.x/', method: 'POST', header: {} };
    reply(200, msg);
    await expect(client().messages.get('msg_1')).resolves.toEqual(msg);
    expect([last().method, last().url]).toEqual(['GET', '/v2/messages/msg_1']);

    reply(200, { cancelled: 1 });
    await expect(client().messages.cancel('a/b')).resolves.toEqual({ cancelled: 1 });
    expect([last().method, last().url]).toEqual(['DELETE', '/v2/messages/a%2Fb']);
  });

  it('cancels many with repeated array params and encoded values', async () => {
    reply(200, { cancelled: 3 });
    const res = await client().messages.cancelMany({
      messageIds: ['m1', 'm2'],
      label: ['x y', 'a&b'],
      url: 'https://e.x/p?q=1',
      fromDate: 1000,
      toDate: 2000,
      count: 5,
    });
    expect(res).toEqual({ cancelled: 3 });
    expect(last().method).toBe('DELETE');
    expect(last().url).toBe(
      '/v2/messages?messageIds=m1&messageIds=m2&label=x%20y&label=a%26b' +
        '&url=https%3A%2F%2Fe.x%2Fp%3Fq%3D1&fromDate=1000&toDate=2000&count=5',
    );
  });

  it('lists a page with filters and normalises the last page cursor', async () => {
    const msg = { messageId: 'msg_2', url: 'https://e.x/', method: 'POST', header: {} };
    reply(200, { cursor: 'msg_1', messages: [msg] });
    await expect(
      client().messages.list({
        count: 1,
        cursor: 'msg_3',
        filter: { label: ['a b', 'c'], url: 'https://e.x/?q=1', queueName: 'jobs' },
      }),
    ).resolves.toEqual({ cursor: 'msg_1', messages: [msg] });
    expect([last().method, last().url]).toEqual([
      'GET',
      '/v2/messages?label=a%20b&label=c&url=https%3A%2F%2Fe.x%2F%3Fq%3D1&queueName=jobs' +
        '&cursor=msg_3&count=1',
    ]);

    reply(200, { cursor: '', messages: [] });
    const page = await client().messages.list();
    expect(page).toEqual({ messages: [] });
    expect('cursor' in page).toBe(false);
    expect(last().url).toBe('/v2/messages');
  });

  it('refuses empty ids instead of hitting the bulk endpoint', async () => {
    await expect(client().messages.get('')).rejects.toThrow(TypeError);
    await expect(client().messages.cancel('')).rejects.toThrow(TypeError);
    await expect(client().messages.cancelMany({ messageIds: [] })).rejects.toThrow(TypeError);
    await expect(client().messages.list({ filter: { messageIds: [] } })).rejects.toThrow(TypeError);
    expect(recorded).toHaveLength(0);
  });
});

describe('FerryClient.workflows', () => {
  it('deletes many DLQ entries by ids or by filter page', async () => {
    reply(200, { deleted: 1 });
    await expect(client().workflows.deleteDlqMany({ dlqIds: ['d1', 'd/2'] })).resolves.toEqual({
      deleted: 1,
    });
    expect([last().method, last().url]).toEqual([
      'DELETE',
      '/v2/workflows/dlq?dlqIds=d1&dlqIds=d%2F2',
    ]);

    reply(200, { deleted: 3, cursor: 'next' });
    await expect(
      client().workflows.deleteDlqMany({ filter: { label: 'l' }, count: 3 }),
    ).resolves.toEqual({ deleted: 3, cursor: 'next' });
    expect(last().url).toBe('/v2/workflows/dlq?label=l&count=3');

    await expect(client().workflows.deleteDlqMany({ dlqIds: [] })).rejects.toThrow(TypeError);
  });
});

describe('FerryClient.events', () => {
  it('lists with filters and normalises the last page cursor', async () => {
    reply(200, { cursor: '', events: [{ messageId: 'msg_1', state: 'DELIVERED' }] });
    const page = await client().events.list({
      cursor: 'c1',
      count: 10,
      filter: { state: ['DELIVERED', 'IN_PROGRESS'], topicName: 'g' },
    });
    expect(page).toEqual({ events: [{ messageId: 'msg_1', state: 'DELIVERED' }] });
    expect('cursor' in page).toBe(false);
    expect(last().url).toBe(
      '/v2/events?state=DELIVERED&state=IN_PROGRESS&topicName=g&cursor=c1&count=10',
    );

    reply(200, { cursor: 'c2', events: [] });
    await expect(client().events.list()).resolves.toEqual({ cursor: 'c2', events: [] });
    expect(last().url).toBe('/v2/events');
  });
});

describe('FerryClient.dlq', () => {
  it('lists, gets and deletes entries', async () => {
    reply(200, { messages: [{ dlqId: 'd1' }] });
    await expect(
      client().dlq.list({ count: 5, filter: { responseStatus: [500, 503], url: 'https://e.x/' } }),
    ).resolves.toEqual({ messages: [{ dlqId: 'd1' }] });
    expect(last().url).toBe(
      '/v2/dlq?responseStatus=500&responseStatus=503&url=https%3A%2F%2Fe.x%2F&count=5',
    );

    reply(200, { dlqId: 'd1' });
    await expect(client().dlq.get('d1')).resolves.toEqual({ dlqId: 'd1' });
    expect([last().method, last().url]).toEqual(['GET', '/v2/dlq/d1']);

    reply(200, '');
    await expect(client().dlq.delete('d1')).resolves.toBeUndefined();
    expect([last().method, last().url]).toEqual(['DELETE', '/v2/dlq/d1']);
  });

  it('deletes and retries many by ids or by filter page', async () => {
    reply(200, { deleted: 2, cursor: '' });
    await expect(client().dlq.deleteMany({ dlqIds: ['d1', 'd2'] })).resolves.toEqual({
      deleted: 2,
    });
    expect([last().method, last().url]).toEqual(['DELETE', '/v2/dlq?dlqIds=d1&dlqIds=d2']);

    reply(201, { cursor: 'next', responses: [{ messageId: 'msg_9' }] });
    await expect(
      client().dlq.retryMany({ filter: { label: 'l' }, cursor: 'c', count: 50 }),
    ).resolves.toEqual({ cursor: 'next', responses: [{ messageId: 'msg_9' }] });
    expect([last().method, last().url]).toEqual([
      'POST',
      '/v2/dlq/retry?label=l&cursor=c&count=50',
    ]);

    await expect(client().dlq.deleteMany({ dlqIds: [] })).rejects.toThrow(TypeError);
  });

  it('retries one entry with override headers sent as given', async () => {
    reply(201, { messageId: 'msg_new' });
    await expect(client().dlq.retry('d1', { headers: { 'Svc-Retries': '0' } })).resolves.toEqual({
      messageId: 'msg_new',
    });
    expect([last().method, last().url]).toEqual(['POST', '/v2/dlq/retry/d1']);
    expect(last().headers['svc-retries']).toBe('0');
    expect(last().body.length).toBe(0);
  });
});

describe('FerryClient.keys', () => {
  it('gets and rotates the signing keys', async () => {
    reply(200, { current: 'sig_a', next: 'sig_b' });
    await expect(client().keys.get()).resolves.toEqual({ current: 'sig_a', next: 'sig_b' });
    expect([last().method, last().url]).toEqual(['GET', '/v2/keys']);

    reply(200, { current: 'sig_b', next: 'sig_c' });
    await expect(client().keys.rotate()).resolves.toEqual({ current: 'sig_b', next: 'sig_c' });
    expect([last().method, last().url]).toEqual(['POST', '/v2/keys/rotate']);
  });
});

describe('errors', () => {
  const failure = async (status: number, body: string): Promise<FerryApiError> => {
    reply(status, body, { 'retry-after': '7' });
    const err: unknown = await client()
      .keys.get()
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(err).toBeInstanceOf(FerryApiError);
    return err as FerryApiError;
  };

  it('uses the server error text', async () => {
    const err = await failure(400, '{"error":"invalid Svc-Retries: \\"x\\""}');
    expect(err.status).toBe(400);
    expect(err.message).toBe('invalid Svc-Retries: "x"');
    expect(err.headers.get('retry-after')).toBe('7');
  });

  it('exposes the rate-limit headers of a 429: daily when RateLimit-Limit is present, else burst', async () => {
    const limited = async (headers: Record<string, string>) => {
      reply(429, { error: 'limited' }, headers);
      const err = (await client()
        .keys.get()
        .catch((e: unknown) => e)) as FerryApiError;
      return err.rateLimit;
    };
    const burst = { 'burst-ratelimit-limit': '3', 'burst-ratelimit-remaining': '0' };
    expect(await limited({ ...burst, 'burst-ratelimit-reset': '1780304401' })).toEqual({
      kind: 'burst',
      limit: 3,
      remaining: 0,
      reset: 1780304401,
    });
    const daily = { 'ratelimit-limit': '6', 'ratelimit-remaining': '1' };
    expect(await limited({ ...daily, 'ratelimit-reset': '1780358400' })).toEqual({
      kind: 'daily',
      limit: 6,
      remaining: 1,
      reset: 1780358400,
    });
    expect(await limited({})).toBeUndefined();
    expect((await failure(400, '{"error":"x"}')).rateLimit).toBeUndefined();
  });

  it('falls back to the raw body, then to the status', async () => {
    expect((await failure(502, 'upstream down')).message).toBe('upstream down');
    expect((await failure(429, '{"other":1}')).message).toBe('{"other":1}');
    const empty = await failure(404, '');
    expect(empty.status).toBe(404);
    expect(empty.message).toBe('HTTP 404 Not Found');
  });
});

describe('FerryClient.schedules', () => {
  it('create sends the destination raw, the cron, id, queue and publish options as headers', async () => {
    reply(200, { scheduleId: 'nightly' });
    const res = await client().schedules.create({
      destination: 'https://example.com/cron?a=1',
      cron: 'CRON_TZ=Europe/Berlin 0 3 * * *',
      scheduleId: 'nightly',
      queueName: 'reports',
      body: 'tick',
      contentType: 'text/plain',
      headers: { 'X-Tenant': 'acme' },
      delay: '1m',
      retries: 1,
    });
    expect(res).toEqual({ scheduleId: 'nightly' });
    const r = last();
    expect(r.method).toBe('POST');
    expect(r.url).toBe('/v2/schedules/https://example.com/cron?a=1');
    expect(r.body.toString()).toBe('tick');
    expect(r.headers['content-type']).toBe('text/plain');
    expect(prefixed(r, 'svc-')).toEqual({
      'svc-cron': 'CRON_TZ=Europe/Berlin 0 3 * * *',
      'svc-schedule-id': 'nightly',
      'svc-queue-name': 'reports',
      'svc-forward-x-tenant': 'acme',
      'svc-delay': '1m',
      'svc-retries': '1',
    });
  });

  it('raw headers win over the built ones, whatever their case', async () => {
    reply(200, { scheduleId: 'x' });
    await client().schedules.create({
      destination: 'https://example.com/',
      cron: '* * * * *',
      rawHeaders: { 'svc-cron': '*/5 * * * *' },
    });
    expect(prefixed(last(), 'svc-')).toEqual({ 'svc-cron': '*/5 * * * *' });
  });

  it('get, list, delete, pause and resume use the documented paths; ids are encoded', async () => {
    reply(200, { scheduleId: 'a b', cron: '* * * * *' });
    reply(200, []);
    const c = client();
    expect(await c.schedules.get('a b')).toMatchObject({ scheduleId: 'a b' });
    expect(await c.schedules.list()).toEqual([]);
    await c.schedules.delete('s1');
    await c.schedules.pause('s1');
    await c.schedules.resume('s1');
    expect(recorded.map((r) => `${r.method} ${r.url}`)).toEqual([
      'GET /v2/schedules/a%20b',
      'GET /v2/schedules',
      'DELETE /v2/schedules/s1',
      'POST /v2/schedules/s1/pause',
      'POST /v2/schedules/s1/resume',
    ]);
    await expect(c.schedules.get('')).rejects.toThrow(TypeError);
  });

  it('rejects with FerryApiError on a 412', async () => {
    reply(412, { error: 'exceeded the maximum number of schedules' });
    const error = await client()
      .schedules.create({ destination: 'https://example.com/', cron: '* * * * *' })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FerryApiError);
    expect((error as FerryApiError).status).toBe(412);
  });
});
