import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startReceiver, type Receiver as Destination } from '../../test/helpers/receiver.js';
import type { DispatchRequest } from './dispatcher.js';
import { createWorkerDispatcher, type WorkerDispatcher } from './worker-dispatcher.js';
import { DeliveryAbort } from './delivery-abort.js';
import { Receiver as SignatureReceiver } from '../sdk/receiver.js';

const KEY = 'sig_worker-test-key';

let receiver: Destination;
let dispatcher: WorkerDispatcher;

beforeAll(async () => {
  receiver = await startReceiver((req) => {
    if (req.path.startsWith('/hang')) return { hang: true };
    if (req.path.startsWith('/big/')) {
      // Bytes 0, 1, 2, … (mod 256), as many as the path says.
      const size = Number(req.path.slice('/big/'.length));
      return { status: 200, body: Buffer.from(Array.from({ length: size }, (_, i) => i % 256)) };
    }
    if (req.path.startsWith('/echo')) {
      return { status: 201, headers: { 'x-echo': String(req.headers['x-id']) }, body: req.body };
    }
    return { status: 200, body: 'ok' };
  });
});
afterAll(() => receiver.close());
afterEach(() => dispatcher?.close());

const request = (path: string, extra: Partial<DispatchRequest> = {}): DispatchRequest => ({
  url: `${receiver.url}${path}`,
  method: 'POST',
  headers: { 'x-id': path },
  body: Buffer.from(path),
  timeoutMs: 5_000,
  maxResponseBytes: 1024,
  ...extra,
});

describe('the delivery thread', () => {
  it('sends the request and returns the response byte for byte', async () => {
    dispatcher = createWorkerDispatcher({ refusePrivate: false });
    const body = Buffer.from([0, 255, 1, 254, 10, 13]);
    const attempt = await dispatcher.send(
      request('/echo?a=1', {
        method: 'PUT',
        headers: { 'x-id': 'one', 'x-multi': ['a', 'b'] },
        body,
      }),
    );
    expect(attempt).toMatchObject({ kind: 'response', status: 201 });
    if (attempt.kind !== 'response') return;
    expect(Buffer.from(attempt.body)).toEqual(body);
    expect(attempt.headers['X-Echo']).toEqual(['one']);
    const seen = receiver.requests.at(-1);
    expect(seen).toMatchObject({ method: 'PUT', path: '/echo?a=1', body });
    expect(seen?.headers['x-multi']).toBe('a, b');
  });

  it('signs the request in the thread, over the URL and body as sent', async () => {
    dispatcher = createWorkerDispatcher({ refusePrivate: false });
    const path = '/echo/signed?x=1';
    await dispatcher.send(
      request(path, {
        sign: { header: 'Svc-Signature', signingKey: KEY, issuer: 'Ferry', nowMs: Date.now() },
      }),
    );
    const seen = receiver.requests.at(-1);
    const receiverCheck = new SignatureReceiver({
      currentSigningKey: KEY,
      nextSigningKey: 'other',
    });
    await expect(
      receiverCheck.verify({
        signature: String(seen?.headers['svc-signature']),
        body: path,
        url: `${receiver.url}${path}`,
      }),
    ).resolves.toBe(true);
  });

  it('gives each of many concurrent sends its own answer', async () => {
    dispatcher = createWorkerDispatcher({ refusePrivate: false });
    const paths = Array.from({ length: 300 }, (_, i) => `/echo/${i}`);
    const attempts = await Promise.all(paths.map((p) => dispatcher.send(request(p))));
    attempts.forEach((attempt, i) => {
      expect(attempt.kind === 'response' && Buffer.from(attempt.body).toString()).toBe(paths[i]);
    });
  });

  it('keeps the first maxResponseBytes of a response body, also of one too large to drain', async () => {
    dispatcher = createWorkerDispatcher({ refusePrivate: false });
    const first = Buffer.from(Array.from({ length: 1024 }, (_, i) => i % 256));
    // 100 kB: read to its end past the cap (the connection is kept); 3 MB: cut off.
    for (const size of [100_000, 3_000_000]) {
      const attempt = await dispatcher.send(request(`/big/${size}`));
      expect(attempt).toMatchObject({ kind: 'response', status: 200 });
      expect(attempt.kind === 'response' && Buffer.from(attempt.body)).toEqual(first);
    }
    expect(await dispatcher.send(request('/ok'))).toMatchObject({ kind: 'response', status: 200 });
  });

  it('times out, and aborts on request, in the thread', async () => {
    dispatcher = createWorkerDispatcher({ refusePrivate: false });
    expect(await dispatcher.send(request('/hang/1', { timeoutMs: 50 }))).toEqual({
      kind: 'error',
      error: 'timeout after 50 ms',
    });
    const abort = new DeliveryAbort();
    const pending = dispatcher.send(request('/hang/2', { abort }));
    await receiver.waitFor(receiver.requests.filter((r) => r.path === '/hang/2').length + 1);
    abort.abort();
    expect(await pending).toEqual({ kind: 'error', error: 'attempt aborted by shutdown' });
  });

  it('aborts a send aborted in the turn it was made, before it crossed to the thread', async () => {
    dispatcher = createWorkerDispatcher({ refusePrivate: false });
    const abort = new DeliveryAbort();
    const pending = dispatcher.send(request('/hang/4', { abort }));
    abort.abort();
    expect(await pending).toEqual({ kind: 'error', error: 'attempt aborted by shutdown' });
  });

  it('fails the sends a dead thread held, and starts a new thread for the next', async () => {
    dispatcher = createWorkerDispatcher({ refusePrivate: false });
    const before = receiver.requests.length;
    const held = dispatcher.send(request('/hang/3'));
    await receiver.waitFor(before + 1);
    await dispatcher.killThread();
    expect(await held).toMatchObject({ kind: 'error', error: /^delivery thread stopped/ });
    expect(await dispatcher.send(request('/ok'))).toMatchObject({ kind: 'response', status: 200 });
  });

  it('refuses private addresses in production mode', async () => {
    dispatcher = createWorkerDispatcher({ refusePrivate: true });
    expect(await dispatcher.send(request('/ok'))).toMatchObject({
      kind: 'error',
      error: 'destination resolves to a private or loopback address',
    });
  });

  it('answers a send after close as a failed attempt', async () => {
    dispatcher = createWorkerDispatcher({ refusePrivate: false });
    await dispatcher.close();
    expect(await dispatcher.send(request('/ok'))).toEqual({
      kind: 'error',
      error: 'dispatcher closed',
    });
  });
});
