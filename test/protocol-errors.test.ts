/**
 * Requests Node's HTTP parser or Fastify's router refuse before a route runs are answered in
 * Ferry's shape, `{"error": "<what is wrong>"}`, not Fastify's `{"error":"Bad Request",
 * "message":"Client Error",…}` or an empty body. Raw sockets: fetch cannot send most of them.
 */
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFerry, type TestFerry } from './helpers/ferry.js';

let t: TestFerry;

beforeAll(async () => {
  t = await startFerry({ engine: false });
});
afterAll(async () => {
  await t.close();
});

/** Sends `raw` on a new connection; the answer once the server closes it (or after 5 s). */
async function exchange(
  raw: string | Buffer,
): Promise<{ status: number; body: unknown; head: string }> {
  const { port } = new URL(t.url);
  const socket = connect(Number(port), '127.0.0.1');
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  socket.on('error', () => undefined);
  await new Promise<void>((resolve) => {
    const timer = setTimeout(() => {
      socket.destroy();
      resolve();
    }, 5_000);
    socket.once('close', () => {
      clearTimeout(timer);
      resolve();
    });
    socket.write(raw);
  });
  const text = Buffer.concat(chunks).toString('latin1');
  const split = text.lastIndexOf('\r\n\r\n');
  const head = text.slice(0, split);
  const bodyText = text.slice(split + 4);
  return {
    status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1]),
    body: bodyText ? (JSON.parse(bodyText) as unknown) : undefined,
    head,
  };
}

const auth = () => `Authorization: Bearer ${t.token}\r\n`;
const publish = (headers: string, body = '') =>
  `POST /v2/publish/https://example.com/a HTTP/1.1\r\nHost: ferry\r\n${auth()}${headers}\r\n${body}`;

const cases: { name: string; raw: () => string; status: number; error: RegExp }[] = [
  {
    name: 'a control character in a header value',
    raw: () => publish('Svc-Label: a\x01b\r\nContent-Length: 1\r\n', 'x'),
    status: 400,
    error: /header name or value/,
  },
  {
    name: 'an invalid header name',
    raw: () => publish('Bad Name: 1\r\nContent-Length: 1\r\n', 'x'),
    status: 400,
    error: /header name or value/,
  },
  {
    name: 'Content-Length: abc',
    raw: () => publish('Content-Length: abc\r\n', 'x'),
    status: 400,
    error: /Content-Length/,
  },
  {
    name: 'two Content-Length headers',
    raw: () => publish('Content-Length: 1\r\nContent-Length: 2\r\n', 'xx'),
    status: 400,
    error: /Content-Length/,
  },
  {
    name: 'Content-Length with chunked',
    raw: () =>
      publish('Content-Length: 1\r\nTransfer-Encoding: chunked\r\n', '1\r\nx\r\n0\r\n\r\n'),
    status: 400,
    error: /Content-Length and Transfer-Encoding/,
  },
  {
    name: 'a bad chunk size',
    raw: () => publish('Transfer-Encoding: chunked\r\n', 'zz\r\nx\r\n0\r\n\r\n'),
    status: 400,
    error: /chunk size/,
  },
  {
    name: 'a lower-case method',
    raw: () => `post /v2/publish/https://example.com HTTP/1.1\r\nHost: ferry\r\n\r\n`,
    status: 400,
    error: /method/,
  },
  {
    name: 'a lone % in the path',
    raw: () =>
      `POST /v2/publish/% HTTP/1.1\r\nHost: ferry\r\n${auth()}Content-Length: 0\r\nConnection: close\r\n\r\n`,
    status: 400,
    error: /^malformed URL/,
  },
  {
    name: '%ff in a message id',
    raw: () => `GET /v2/messages/%ff HTTP/1.1\r\nHost: ferry\r\n${auth()}Connection: close\r\n\r\n`,
    status: 400,
    error: /^malformed URL/,
  },
  {
    name: '%ff at the root',
    raw: () => `GET /%ff HTTP/1.1\r\nHost: ferry\r\nConnection: close\r\n\r\n`,
    status: 400,
    error: /^malformed URL/,
  },
  {
    name: 'no Host header',
    raw: () => `GET /health HTTP/1.1\r\n\r\n`,
    status: 400,
    error: /missing Host header/,
  },
  {
    name: 'Expect: bogus',
    raw: () => publish('Expect: bogus\r\nContent-Length: 1\r\n', 'x'),
    status: 417,
    error: /Expect header "bogus"/,
  },
];

describe('HTTP-level errors in Ferry’s shape', () => {
  it.each(cases)('$name', async ({ raw, status, error }) => {
    const answer = await exchange(raw());
    expect(answer.status).toBe(status);
    expect(answer.body).toEqual({ error: expect.stringMatching(error) as string });
    expect(Object.keys(answer.body as object)).toEqual(['error']);
  });

  it('still serves a well-formed HTTP/1.0 request without Host', async () => {
    const answer = await exchange(`GET /health HTTP/1.0\r\n\r\n`);
    expect(answer.body).toEqual({ status: 'ok' });
  });

  it('still answers Expect: 100-continue with 100, then the answer', async () => {
    const answer = await exchange(
      `POST /v2/publish/https://example.com/a HTTP/1.1\r\nHost: ferry\r\n${auth()}` +
        'Expect: 100-continue\r\nContent-Length: 1\r\nConnection: close\r\n\r\nx',
    );
    expect(answer.head).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 /);
  });
});
