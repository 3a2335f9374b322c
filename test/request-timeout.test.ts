/**
 * A request that never finishes arriving is answered 408 near `--request-timeout` and its
 * connection closed (issue: a body stalled after 10 of 100 bytes was held past 330 s), and the
 * unauthenticated webhook route answers an unknown target before reading the body. Real
 * sockets against a real server; the timeout is set small and the answer's time measured.
 */
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFerry, type TestFerry } from './helpers/ferry.js';

const TIMEOUT_MS = 600;
let t: TestFerry;
/** What the server logged, as `level message`. */
const logged: string[] = [];
const record =
  (level: string) =>
  (obj: object | string, msg?: string): void => {
    logged.push(`${level} ${msg ?? (typeof obj === 'string' ? obj : '')}`);
  };

beforeAll(async () => {
  t = await startFerry({
    engine: false,
    logger: {
      debug: record('debug'),
      info: record('info'),
      warn: record('warn'),
      error: record('error'),
    },
    configure: (config) => {
      config.requestTimeoutMs = TIMEOUT_MS;
    },
  });
});
afterAll(async () => {
  await t.close();
});

interface Exchange {
  socket: Socket;
  /** Everything the server sent, once it closed the connection or `deadlineMs` passed. */
  closed: Promise<{ text: string; atMs: number; closed: boolean }>;
  startedAt: number;
}

/** Opens a connection and collects what the server sends until it closes or `deadlineMs`. */
async function open(deadlineMs: number): Promise<Exchange> {
  const { port } = new URL(t.url);
  const socket = connect(Number(port), '127.0.0.1');
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  const startedAt = performance.now();
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  const closed = new Promise<{ text: string; atMs: number; closed: boolean }>((resolve) => {
    const timer = setTimeout(() => {
      resolve({ text: Buffer.concat(chunks).toString(), atMs: deadlineMs, closed: false });
      socket.destroy();
    }, deadlineMs);
    socket.on('error', () => undefined);
    socket.once('close', () => {
      clearTimeout(timer);
      resolve({
        text: Buffer.concat(chunks).toString(),
        atMs: performance.now() - startedAt,
        closed: true,
      });
    });
  });
  return { socket, closed, startedAt };
}

/** Status and parsed JSON body of a raw HTTP/1.1 answer. */
function parse(text: string): { status: number; body: unknown } {
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1]);
  const body = text.slice(text.indexOf('\r\n\r\n') + 4);
  return { status, body: body ? JSON.parse(body) : undefined };
}

const auth = () => `Authorization: Bearer ${t.token}\r\n`;

/** The 408 came after the timeout and near it (Node checks at a tenth of it; slack for CI). */
function expectTimedOut(result: { text: string; atMs: number; closed: boolean }): void {
  expect(result.closed).toBe(true);
  const { status, body } = parse(result.text);
  expect(status).toBe(408);
  expect(body).toEqual({ error: expect.stringMatching(/--request-timeout/) as string });
  expect(result.atMs).toBeGreaterThanOrEqual(TIMEOUT_MS - 20);
  expect(result.atMs).toBeLessThan(TIMEOUT_MS + 1_500);
}

describe('--request-timeout', () => {
  it('answers 408 and closes a body that stops arriving (Content-Length 100, 10 bytes sent)', async () => {
    const x = await open(TIMEOUT_MS + 5_000);
    x.socket.write(
      `POST /v2/publish/https://example.com/a HTTP/1.1\r\nHost: ferry\r\n${auth()}` +
        'Content-Length: 100\r\n\r\n0123456789',
    );
    expectTimedOut(await x.closed);
  });

  it('answers 408 to a chunked body trickled without end', async () => {
    const x = await open(TIMEOUT_MS + 5_000);
    x.socket.write(
      `POST /v2/publish/https://example.com/a HTTP/1.1\r\nHost: ferry\r\n${auth()}` +
        'Transfer-Encoding: chunked\r\n\r\n',
    );
    const trickle = setInterval(() => x.socket.write('1\r\nx\r\n'), 50);
    try {
      expectTimedOut(await x.closed);
    } finally {
      clearInterval(trickle);
    }
  });

  it('answers 408 to headers that never finish', async () => {
    const x = await open(TIMEOUT_MS + 5_000);
    x.socket.write(`POST /v2/publish/https://example.com/a HTTP/1.1\r\nHost: ferry\r\n`);
    expectTimedOut(await x.closed);
  });

  it('accepts a slow body that arrives within the timeout', async () => {
    const x = await open(5_000);
    x.socket.write(
      `POST /v2/publish/https://example.com/a HTTP/1.1\r\nHost: ferry\r\n${auth()}` +
        'Content-Length: 10\r\nConnection: close\r\n\r\n01234',
    );
    setTimeout(() => x.socket.write('56789'), TIMEOUT_MS / 3);
    const result = await x.closed;
    const { status, body } = parse(result.text);
    expect(status).toBe(200);
    expect(body).toMatchObject({ messageId: expect.any(String) as string });
  });

  it('starts the time afresh for each request on a keep-alive connection', async () => {
    const x = await open(5_000);
    const request = `GET /health HTTP/1.1\r\nHost: ferry\r\n\r\n`;
    x.socket.write(request);
    // Three requests spread over more than the timeout, each quick.
    for (let i = 0; i < 3; i++) {
      await new Promise((resolve) => setTimeout(resolve, TIMEOUT_MS / 2));
      x.socket.write(request);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
    x.socket.end();
    const result = await x.closed;
    expect(result.text.match(/HTTP\/1\.1 200/g)).toHaveLength(4);
  });
});

describe('workflow webhooks without a live target', () => {
  it('answer 404 before reading the body, and discard it as it comes', async () => {
    const x = await open(TIMEOUT_MS + 5_000);
    let answeredAt: number | undefined;
    x.socket.on('data', () => (answeredAt ??= performance.now() - x.startedAt));
    // 10 MiB announced, 64 KiB sent: the answer may not wait for the rest.
    x.socket.write(
      'POST /v2/workflows/hooks/u/wfr_x/evt_x HTTP/1.1\r\nHost: ferry\r\n' +
        'Content-Length: 10485760\r\n\r\n',
    );
    x.socket.write(Buffer.alloc(64 * 1024, 'a'));
    const result = await x.closed;
    // The 404, then the 408 of the rest of the body that never came (the connection then closes).
    const { status, body } = parse(result.text.slice(0, result.text.indexOf('}') + 1));
    expect(status).toBe(404);
    expect(body).toEqual({ error: 'no workflow run waits on this webhook' });
    // Answered long before the timeout closed the stalled rest of the body.
    expect(answeredAt).toBeLessThan(TIMEOUT_MS / 2);
    expect(result.closed).toBe(true);
  });

  it('answer 404 to an unknown account with no body at all', async () => {
    const res = await fetch(`${t.url}/v2/workflows/hooks/nobody/wfr_x/evt_x`, {
      method: 'POST',
      body: 'x',
    });
    expect(res.status).toBe(404);
  });
});

/** Waits for `check` to hold, polling, until `deadlineMs`. */
async function until(check: () => boolean, deadlineMs = 5_000): Promise<void> {
  const end = performance.now() + deadlineMs;
  while (!check()) {
    if (performance.now() > end) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('a client that disconnects while sending its body', () => {
  it('is logged at debug as a disconnect, never as "storage unavailable"', async () => {
    const before = logged.length;
    const x = await open(5_000);
    // Node answers `100 Continue` as it hands the request over: then its body is being read.
    const continued = new Promise<void>((resolve) =>
      x.socket.on('data', (chunk: Buffer) => {
        if (chunk.toString().includes('100 Continue')) resolve();
      }),
    );
    x.socket.write(
      `POST /v2/publish/https://example.com/a HTTP/1.1\r\nHost: ferry\r\n${auth()}` +
        'Expect: 100-continue\r\nContent-Length: 100\r\n\r\n',
    );
    await continued;
    x.socket.write('0123456789');
    x.socket.resetAndDestroy();
    await until(() => logged.slice(before).some((l) => l.startsWith('debug client disconnected')));
    // The earlier 408s cut bodies off too: none of them was a storage alert either.
    expect(logged.filter((l) => !l.startsWith('debug'))).toEqual([]);
  });
});
