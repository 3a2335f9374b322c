/**
 * Every body is read as raw bytes whatever its `Content-Type` (docs/api.md, "Bodies"): a header
 * Fastify cannot parse as a media type (empty, `text`, a list, a comment, non-ASCII) was answered
 * `415 {"error":"Unsupported Media Type"}` on every route with a body. Raw sockets: fetch
 * refuses some of these values.
 */
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFerry, type TestFerry } from './helpers/ferry.js';
import { basic, createMgmtUser, type MgmtUser } from './helpers/mgmt.js';

let t: TestFerry;
let admin: MgmtUser;

beforeAll(async () => {
  t = await startFerry({ engine: false });
  admin = await createMgmtUser(t, true);
});
afterAll(async () => {
  await t.close();
});

/** One request on a new connection (`Connection: close`); its status and JSON body. */
async function send(
  method: string,
  path: string,
  headers: Record<string, string>,
  body: string,
): Promise<{ status: number; body: unknown }> {
  const { port } = new URL(t.url);
  const socket = connect(Number(port), '127.0.0.1');
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  const lines = Object.entries({
    host: 'ferry',
    connection: 'close',
    'content-length': String(Buffer.byteLength(body)),
    ...headers,
  }).map(([name, value]) => `${name}: ${value}\r\n`);
  await new Promise<void>((resolve, reject) => {
    socket.once('close', () => resolve());
    socket.once('error', reject);
    // latin1: a non-ASCII header value goes out as the bytes a client would send.
    socket.write(
      Buffer.from(`${method} ${path} HTTP/1.1\r\n${lines.join('')}\r\n${body}`, 'latin1'),
    );
  });
  const text = Buffer.concat(chunks).toString();
  const bodyText = text.slice(text.indexOf('\r\n\r\n') + 4);
  return {
    status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1]),
    body: bodyText ? (JSON.parse(bodyText) as unknown) : undefined,
  };
}

const CONTENT_TYPES = [
  '',
  'text',
  'json',
  'application/json, text/plain',
  'text/plain (comment)',
  'té/xt',
];

describe.each(CONTENT_TYPES)('Content-Type: %j', (contentType) => {
  const headers = () => ({
    authorization: `Bearer ${t.token}`,
    'content-type': contentType,
  });

  it('publish, with a body and with an empty one, keeps the header for delivery', async () => {
    for (const body of ['hello', '']) {
      const res = await send('POST', '/v2/publish/https://example.com/ct', headers(), body);
      expect(res.status).toBe(200);
      const { messageId } = res.body as { messageId: string };
      const message = (await (await t.api(`/v2/messages/${messageId}`)).json()) as {
        header?: Record<string, string[]>;
      };
      if (contentType !== '') {
        // Non-ASCII arrives as latin1 bytes, read as such by Node.
        expect(message.header?.['Content-Type']).toEqual([
          Buffer.from(contentType, 'latin1').toString('latin1'),
        ]);
      }
    }
  });

  it('batch parses its JSON body', async () => {
    const res = await send(
      'POST',
      '/v2/batch',
      headers(),
      JSON.stringify([{ destination: 'https://example.com/b', body: 'x' }]),
    );
    expect(res.status).toBe(200);
  });

  it('the queue upsert parses its JSON body', async () => {
    const res = await send(
      'POST',
      '/v2/queues',
      headers(),
      JSON.stringify({ queueName: 'ct', parallelism: 1 }),
    );
    expect(res.status).toBe(200);
  });

  it('the management API parses its JSON body', async () => {
    const res = await send(
      'POST',
      '/v2/queue',
      { authorization: basic(admin.email, admin.apiKey), 'content-type': contentType },
      JSON.stringify({ type: 'free' }),
    );
    expect(res.status).toBe(200);
  });

  it('a webhook answers for its URL, not its Content-Type', async () => {
    const res = await send('POST', '/v2/workflows/hooks/u/wfr_x/evt_x', headers(), 'x');
    expect(res).toEqual({ status: 404, body: { error: 'no workflow run waits on this webhook' } });
  });
});

describe('a JSON body that is not JSON', () => {
  it('is a 400 naming the body, whatever the Content-Type', async () => {
    const res = await send(
      'POST',
      '/v2/queues',
      { authorization: `Bearer ${t.token}`, 'content-type': 'text/plain' },
      'queueName=x',
    );
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: expect.stringMatching(/^invalid JSON body/) as string });
  });
});
