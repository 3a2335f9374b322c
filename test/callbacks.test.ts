/**
 * Callbacks and failure callbacks against real receivers: one callback per attempt, the failure
 * callback with a working dlqId, callback settings, callback retries and DLQ entries, exact
 * base64 fields, truncation, errors without a response, and signatures (ours and QStash's
 * Receiver). Time is a manual clock; the engine is driven by `runOnce()`.
 */
import { Receiver as UpstashReceiver } from '@upstash/qstash';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/core/clock.js';
import { Receiver } from '../src/sdk/index.js';
import { STORAGES, startFerry, type TestFerry, type TestFerryOptions } from './helpers/ferry.js';
import { planArgs } from './helpers/limits.js';
import { startReceiver, type Receiver as Destination } from './helpers/receiver.js';

type Json = Record<string, unknown>;

describe.each(STORAGES)('on %s', (storage) => {
  let t: TestFerry;
  let clock: ManualClock;
  let dest: Destination;
  let hooks: Destination;

  async function start(options: TestFerryOptions = {}): Promise<void> {
    clock = new ManualClock(Date.now());
    t = await startFerry({ clock, engine: false, storage, ...options });
  }
  beforeEach(async () => {
    dest = await startReceiver();
    hooks = await startReceiver();
  });
  afterEach(async () => {
    await t.close();
    await Promise.all([dest.close(), hooks.close()]);
  });

  async function publish(target: string, body: string | Buffer, headers: Record<string, string>) {
    const res = await t.api(`/v2/publish/${target}`, { method: 'POST', headers, body });
    expect(res.status).toBe(200);
    return ((await res.json()) as { messageId: string }).messageId;
  }

  /** Runs the engine until nothing is due now. */
  async function drain(): Promise<void> {
    while ((await t.ferry.engine.runOnce()) > 0);
  }

  const bodyOf = (req: { body: Buffer } | undefined): Json =>
    JSON.parse(req?.body.toString() ?? '{}') as Json;

  it('a callback after every attempt until the destination answers 2xx, with exact fields', async () => {
    await start();
    dest.respond((_req, i) =>
      i < 2
        ? { status: 503, headers: { 'x-attempt': String(i) }, body: Buffer.from([0xff, 0, i]) }
        : { status: 201, body: 'created' },
    );
    const sourceBody = Buffer.from([0x00, 0x9f, 0x92, 0x96, 0x0a, 0xff]);
    const messageId = await publish(`${dest.url}/orders?x=1`, sourceBody, {
      'content-type': 'application/octet-stream',
      'Svc-Forward-X-Source': 'yes',
      'Svc-Callback': `${hooks.url}/cb`,
      'Svc-Retries': '3',
      'Svc-Retry-Delay': '1000',
    });
    const message = (await (await t.api(`/v2/messages/${messageId}`)).json()) as Json;
    expect(message.callback).toBe(`${hooks.url}/cb`);

    await t.ferry.engine.runOnce(); // attempt 1 (503) → callback message stored
    await drain(); // the callback is delivered
    clock.advance(1_000);
    await drain(); // attempt 2 (503) and its callback
    clock.advance(1_000);
    await drain(); // attempt 3 (201) and its callback
    await drain();
    expect(dest.requests).toHaveLength(3);
    const callbacks = await hooks.waitFor(3);
    expect(callbacks).toHaveLength(3); // none after the success

    const bodies = callbacks.map(bodyOf);
    expect(bodies.map((b) => b.status)).toEqual([503, 503, 201]);
    expect(bodies.map((b) => b.retried)).toEqual([0, 1, 2]);
    expect(bodies[0]).toMatchObject({
      header: { 'X-Attempt': ['0'] },
      body: Buffer.from([0xff, 0, 0]).toString('base64'),
      maxRetries: 3,
      sourceMessageId: messageId,
      url: `${dest.url}/orders?x=1`,
      method: 'POST',
      sourceHeader: { 'Content-Type': ['application/octet-stream'], 'X-Source': ['yes'] },
      sourceBody: sourceBody.toString('base64'),
      notBefore: String(message.notBefore),
      createdAt: String(message.createdAt),
      callerIP: '127.0.0.1',
    });
    expect(bodies[2]?.body).toBe(Buffer.from('created').toString('base64'));
    expect(bodies[0]?.dlqId).toBeUndefined();

    // Each callback is a POST of JSON, signed for the callback URL, a message of its own.
    const [first] = callbacks;
    expect(first?.method).toBe('POST');
    expect(first?.headers['content-type']).toBe('application/json');
    const receiver = new Receiver({
      currentSigningKey: t.account.currentSigningKey,
      nextSigningKey: t.account.nextSigningKey,
    });
    await expect(
      receiver.verify({
        signature: first?.headers['svc-signature'] as string,
        body: first?.body ?? '',
        url: first?.url,
      }),
    ).resolves.toBe(true);
    // Callback messages are metered (and billed) like any message: 1 source + 3 callbacks.
    expect(await t.ferry.meter.monthCount(t.account.id, 'messages', clock.now())).toBe(4);
    const callbackId = first?.headers['svc-message-id'] as string;
    expect(callbackId).toMatch(/^msg_/);
    expect(callbackId).not.toBe(messageId);
    const log = (await (await t.api(`/v2/events?messageId=${callbackId}`)).json()) as {
      events: Json[];
    };
    expect(log.events.map((e) => e.state)).toEqual(['DELIVERED', 'ACTIVE', 'CREATED']);
    expect(log.events[2]?.url).toBe(`${hooks.url}/cb`);
  });

  it('a failure callback once retries are exhausted, whose dlqId works with the DLQ endpoints', async () => {
    await start();
    dest.respond(() => ({ status: 500, body: 'broken' }));
    const messageId = await publish(dest.url, 'payload', {
      'Svc-Failure-Callback': `${hooks.url}/failed`,
      'Svc-Failure-Callback-Forward-X-Team': 'ops',
      'Svc-Failure-Callback-Method': 'PUT',
      'Svc-Retries': '1',
      'Svc-Retry-Delay': '1000',
    });
    await drain();
    expect(hooks.requests).toHaveLength(0); // no failure callback while a retry remains
    clock.advance(1_000);
    await drain();
    await drain();
    const [failure] = await hooks.waitFor(1);
    expect(hooks.requests).toHaveLength(1);
    expect(failure?.method).toBe('PUT');
    expect(failure?.path).toBe('/failed');
    expect(failure?.headers['x-team']).toBe('ops');
    const body = bodyOf(failure);
    expect(body).toMatchObject({
      status: 500,
      retried: 1,
      maxRetries: 1,
      sourceMessageId: messageId,
      body: Buffer.from('broken').toString('base64'),
      sourceBody: Buffer.from('payload').toString('base64'),
    });
    const dlqId = body.dlqId as string;
    expect(dlqId).toMatch(/^dlq_/);
    const entry = await t.api(`/v2/dlq/${dlqId}`);
    expect(entry.status).toBe(200);
    expect(((await entry.json()) as Json).messageId).toBe(messageId);
    expect((await t.api(`/v2/dlq/${dlqId}`, { method: 'DELETE' })).status).toBe(200);
    expect((await t.api(`/v2/dlq/${dlqId}`)).status).toBe(404);
  });

  it('callback settings: forward headers, method, delay, retries on a failing callback URL, DLQ entry, no loops', async () => {
    await start();
    hooks.respond(() => ({ status: 500 }));
    await publish(dest.url, 'x', {
      'Svc-Callback': `${hooks.url}/cb`,
      'Svc-Callback-Forward-Authorization': 'Bearer callback-secret',
      'Svc-Callback-Method': 'PATCH',
      'Svc-Callback-Delay': '30s',
      'Svc-Callback-Retries': '2',
      'Svc-Callback-Retry-Delay': '1000',
      'Svc-Retries': '0',
    });
    await drain();
    expect(dest.requests).toHaveLength(1);
    expect(hooks.requests).toHaveLength(0); // the callback waits for its delay
    clock.advance(30_000);
    await drain();
    for (let i = 0; i < 2; i++) {
      clock.advance(1_000);
      await drain();
    }
    const calls = await hooks.waitFor(3);
    expect(calls.map((c) => c.method)).toEqual(['PATCH', 'PATCH', 'PATCH']);
    expect(calls.map((c) => c.headers['svc-retried'])).toEqual(['0', '1', '2']);
    expect(calls.every((c) => c.headers.authorization === 'Bearer callback-secret')).toBe(true);
    // Out of retries: the callback message is in the DLQ, and no callback of a callback followed.
    clock.advance(3_600_000);
    await drain();
    expect(hooks.requests).toHaveLength(3);
    const dlq = (await (await t.api('/v2/dlq')).json()) as { messages: Json[] };
    expect(dlq.messages).toHaveLength(1);
    expect(dlq.messages[0]).toMatchObject({
      url: `${hooks.url}/cb`,
      method: 'PATCH',
      maxRetries: 2,
    });
  });

  it('no response (connection refused): status 0 and the error in the callback body', async () => {
    await start();
    await publish('http://127.0.0.1:1/closed', 'x', {
      'Svc-Callback': hooks.url,
      'Svc-Failure-Callback': `${hooks.url}/failure`,
      'Svc-Retries': '0',
    });
    await drain();
    await drain();
    const calls = await hooks.waitFor(2);
    const bodies = Object.fromEntries(calls.map((c) => [c.path, bodyOf(c)]));
    for (const body of Object.values(bodies)) {
      expect(body.status).toBe(0);
      expect(body.error).toMatch(/ECONNREFUSED/);
    }
    expect(bodies['/failure']?.dlqId).toMatch(/^dlq_/);
  });

  it('the response body in the callback is truncated at max_message_size', async () => {
    await start({ args: planArgs({ paid: { max_message_size: 1000 } }) });
    const big = Buffer.alloc(5000, 'a');
    big.write('HEAD', 0);
    dest.respond(() => ({ status: 200, body: big }));
    await publish(dest.url, 'x', { 'Svc-Callback': hooks.url });
    await drain();
    await drain();
    const [call] = await hooks.waitFor(1);
    const got = Buffer.from(bodyOf(call).body as string, 'base64');
    expect(got.length).toBe(1000);
    expect(got.equals(big.subarray(0, 1000))).toBe(true);
  });

  it('callbacks work for every endpoint of a URL group and carry topicName/endpointName', async () => {
    await start();
    await t.api('/v2/topics/g/endpoints', {
      method: 'POST',
      body: JSON.stringify({
        endpoints: [{ url: `${dest.url}/a`, name: 'a' }, { url: `${dest.url}/b` }],
      }),
    });
    await t.api('/v2/topics/g', {
      method: 'PATCH',
      body: JSON.stringify({ headers: { 'Svc-Callback': `${hooks.url}/group` } }),
    });
    await publish('g', 'fan', {});
    await drain();
    await drain();
    const calls = (await hooks.waitFor(2)).map(bodyOf);
    const names = calls.map((c) => `${String(c.topicName)}/${String(c.endpointName)}`);
    expect(names.sort()).toEqual(['g/a', 'g/undefined']);
  });

  it('the callback message of a redacted message is redacted in the API; the callback gets the values', async () => {
    await start();
    const messageId = await publish(dest.url, 'secret-body', {
      'Svc-Callback': hooks.url,
      'Svc-Redact-Fields': 'body',
      'Svc-Callback-Delay': '1m',
    });
    await drain();
    const events = (await (await t.api('/v2/events?state=CREATED')).json()) as { events: Json[] };
    const callbackEvent = events.events.find((e) => e.messageId !== messageId);
    expect(callbackEvent?.body).toMatch(/^REDACTED:[0-9a-f]{64}$/);
    const callbackMessage = (await (
      await t.api(`/v2/messages/${String(callbackEvent?.messageId)}`)
    ).json()) as Json;
    expect(callbackMessage.body).toMatch(/^REDACTED:/);
    clock.advance(60_000);
    await drain();
    const [call] = await hooks.waitFor(1);
    expect(Buffer.from(bodyOf(call).sourceBody as string, 'base64').toString()).toBe('secret-body');
  });

  it('in Upstash mode the official Receiver verifies callbacks and failure callbacks', async () => {
    await start({ args: ['--header-prefix', 'Upstash'] });
    dest.respond(() => ({ status: 500 }));
    await publish(dest.url, 'z', {
      'Upstash-Callback': `${hooks.url}/cb`,
      'Upstash-Failure-Callback': `${hooks.url}/fail`,
      'Upstash-Retries': '0',
    });
    await drain();
    await drain();
    const calls = await hooks.waitFor(2);
    const receiver = new UpstashReceiver({
      currentSigningKey: t.account.currentSigningKey,
      nextSigningKey: t.account.nextSigningKey,
    });
    for (const call of calls) {
      await expect(
        receiver.verify({
          signature: call.headers['upstash-signature'] as string,
          body: call.body.toString(),
          url: call.url,
        }),
      ).resolves.toBe(true);
    }
    expect(calls.map((c) => c.path).sort()).toEqual(['/cb', '/fail']);
  });

  it('the SDK sends callback and failure-callback settings', async () => {
    await start();
    dest.respond(() => ({ status: 500 }));
    const result = await t.client.publish({
      destination: dest.url,
      body: 'sdk',
      retries: 0,
      callback: { url: `${hooks.url}/cb`, headers: { 'X-Cb': '1' }, method: 'PUT' },
      failureCallback: `${hooks.url}/fail`,
    });
    const message = await t.client.messages.get((result as { messageId: string }).messageId);
    expect([message.callback, message.failureCallback]).toEqual([
      `${hooks.url}/cb`,
      `${hooks.url}/fail`,
    ]);
    await drain();
    await drain();
    const calls = await hooks.waitFor(2);
    const cb = calls.find((c) => c.path === '/cb');
    expect(cb?.method).toBe('PUT');
    expect(cb?.headers['x-cb']).toBe('1');
    expect(calls.find((c) => c.path === '/fail')?.method).toBe('POST');
  });
});
