/**
 * Publish → delivery against real HTTP receivers on 127.0.0.1, with time stepped by a manual
 * clock and the engine driven by `runOnce()`.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/core/clock.js';
import { Receiver } from '../src/sdk/index.js';
import { STORAGES, startFerry, type TestFerry } from './helpers/ferry.js';
import { startReceiver, type Receiver as Destination } from './helpers/receiver.js';

describe.each(STORAGES)('on %s', (storage) => {
  let t: TestFerry;
  let clock: ManualClock;
  let dest: Destination;

  beforeEach(async () => {
    clock = new ManualClock(Date.now());
    t = await startFerry({ clock, engine: false, storage });
    dest = await startReceiver();
  });
  afterEach(async () => {
    await t.close();
    await dest.close();
  });

  async function publish(
    path: string,
    init: RequestInit = {},
  ): Promise<{ status: number; json: Record<string, unknown> }> {
    const res = await t.api(`/v2/publish/${path}`, { method: 'POST', ...init });
    return { status: res.status, json: (await res.json()) as Record<string, unknown> };
  }

  async function events(query = ''): Promise<Record<string, unknown>[]> {
    const res = await t.api(`/v2/events${query}`);
    expect(res.status).toBe(200);
    return ((await res.json()) as { events: Record<string, unknown>[] }).events;
  }

  describe('delivery', () => {
    it('delivers the body byte for byte with the added headers and a verifiable signature', async () => {
      const body = Buffer.from([0, 1, 2, 255, 254, 10, 13, 0x80]);
      const { status, json } = await publish(`${dest.url}/hook?x=1&y=two`, {
        body,
        headers: {
          'content-type': 'application/octet-stream',
          'Svc-Forward-X-Custom': 'abc',
          'Svc-Forward-Svc-Inner': 'kept',
          'Svc-Method': 'PUT',
        },
      });
      expect(status).toBe(200);
      const messageId = json.messageId as string;
      expect(messageId).toMatch(/^msg_/);

      expect(await t.ferry.engine.runOnce()).toBe(1);
      const [req] = await dest.waitFor(1);
      expect(req?.method).toBe('PUT');
      expect(req?.path).toBe('/hook?x=1&y=two');
      expect(req?.body.equals(body)).toBe(true);
      expect(req?.headers['content-type']).toBe('application/octet-stream');
      expect(req?.headers['x-custom']).toBe('abc');
      expect(req?.headers['svc-inner']).toBe('kept');
      expect(req?.headers['svc-message-id']).toBe(messageId);
      expect(req?.headers['svc-retried']).toBe('0');
      expect(req?.headers['svc-caller-ip']).toBe('127.0.0.1');
      expect(req?.headers['user-agent']).toBe('Ferry');

      const receiver = new Receiver({
        currentSigningKey: t.account.currentSigningKey,
        nextSigningKey: t.account.nextSigningKey,
      });
      await expect(
        receiver.verify({
          signature: req?.headers['svc-signature'] as string,
          body: req?.body ?? '',
          url: req?.url,
        }),
      ).resolves.toBe(true);

      const states = (await events(`?messageId=${messageId}`)).map((e) => e.state);
      expect(states).toEqual(['DELIVERED', 'ACTIVE', 'CREATED']);
    });

    it('retries with the retry-delay expression, then succeeds', async () => {
      dest.respond((_req, i) => ({ status: i < 2 ? 500 : 200 }));
      const { json } = await publish(`${dest.url}/flaky`, {
        body: 'x',
        headers: { 'Svc-Retries': '3', 'Svc-Retry-Delay': '1000 * (1 + retried)' },
      });
      expect(await t.ferry.engine.runOnce()).toBe(1);
      expect(await t.ferry.engine.runOnce()).toBe(0); // not due yet
      clock.advance(1000); // retried = 0 → 1000 ms
      expect(await t.ferry.engine.runOnce()).toBe(1);
      clock.advance(1999);
      expect(await t.ferry.engine.runOnce()).toBe(0);
      clock.advance(1); // retried = 1 → 2000 ms
      expect(await t.ferry.engine.runOnce()).toBe(1);
      expect(dest.requests.map((r) => r.headers['svc-retried'])).toEqual(['0', '1', '2']);

      const log = await events(`?messageId=${json.messageId as string}`);
      expect(log.map((e) => e.state).reverse()).toEqual([
        'CREATED',
        'ACTIVE',
        'ERROR',
        'RETRY',
        'ACTIVE',
        'ERROR',
        'RETRY',
        'ACTIVE',
        'DELIVERED',
      ]);
      const retry = log.find((e) => e.state === 'RETRY');
      expect(retry?.nextDeliveryTime).toBe(clock.now());
      const error = log.find((e) => e.state === 'ERROR');
      expect(error?.responseStatus).toBe(500);
    });

    it('uses the default backoff e^(2.5n) seconds without an expression', async () => {
      dest.respond(() => ({ status: 503 }));
      await publish(`${dest.url}/x`, { headers: { 'Svc-Retries': '2' } });
      const start = clock.now();
      await t.ferry.engine.runOnce();
      const retry = (await events('?state=RETRY'))[0];
      expect(retry?.nextDeliveryTime).toBe(start + Math.round(Math.exp(2.5) * 1000));
    });

    it('honours Retry-After from the destination', async () => {
      dest.respond(() => ({ status: 429, headers: { 'retry-after': '7' } }));
      await publish(`${dest.url}/x`, { headers: { 'Svc-Retry-Delay': '100' } });
      const start = clock.now();
      await t.ferry.engine.runOnce();
      const retry = (await events('?state=RETRY'))[0];
      expect(retry?.nextDeliveryTime).toBe(start + 7000);
    });

    it('moves the message to the DLQ after the last retry, with the last response', async () => {
      dest.respond(() => ({ status: 500, body: 'broken' }));
      const { json } = await publish(`${dest.url}/down`, {
        body: 'payload',
        headers: { 'Svc-Retries': '1', 'Svc-Retry-Delay': '0', 'Svc-Label': 'billing' },
      });
      await t.ferry.engine.runOnce();
      await t.ferry.engine.runOnce();
      expect(dest.requests).toHaveLength(2);
      expect(await t.ferry.engine.runOnce()).toBe(0);

      const res = await t.api('/v2/dlq');
      const { messages } = (await res.json()) as { messages: Record<string, unknown>[] };
      expect(messages).toHaveLength(1);
      expect(messages[0]).toMatchObject({
        messageId: json.messageId,
        url: `${dest.url}/down`,
        body: 'payload',
        responseStatus: 500,
        responseBody: 'broken',
        label: 'billing',
        maxRetries: 1,
      });
      const states = (await events(`?messageId=${json.messageId as string}`)).map((e) => e.state);
      expect(states[0]).toBe('FAILED');
      const gone = await t.api(`/v2/messages/${json.messageId as string}`);
      expect(gone.status).toBe(404);
    });

    it('fails at once on 489 with the non-retryable header', async () => {
      dest.respond(() => ({ status: 489, headers: { 'Svc-NonRetryable-Error': 'true' } }));
      await publish(`${dest.url}/x`, { headers: { 'Svc-Retries': '5' } });
      await t.ferry.engine.runOnce();
      clock.advance(86_400_000);
      expect(await t.ferry.engine.runOnce()).toBe(0);
      expect(dest.requests).toHaveLength(1);
      const res = await t.api('/v2/dlq');
      expect(((await res.json()) as { messages: unknown[] }).messages).toHaveLength(1);
    });

    it('does not follow redirects: a 3xx is a failed attempt', async () => {
      const other = await startReceiver();
      dest.respond(() => ({ status: 302, headers: { location: `${other.url}/elsewhere` } }));
      await publish(`${dest.url}/x`, { headers: { 'Svc-Retries': '0' } });
      await t.ferry.engine.runOnce();
      expect(other.requests).toHaveLength(0);
      const failed = await events('?state=FAILED');
      expect(failed).toHaveLength(1);
      await other.close();
    });

    it('times out a hanging destination after Svc-Timeout', async () => {
      dest.respond(() => ({ hang: true }));
      await publish(`${dest.url}/slow`, { headers: { 'Svc-Timeout': '1s', 'Svc-Retries': '0' } });
      await t.ferry.engine.runOnce();
      const [failed] = await events('?state=ERROR');
      expect(failed?.error).toMatch(/timeout/i);
    });

    it('delays with Svc-Delay; Svc-Not-Before wins over it', async () => {
      await publish(`${dest.url}/a`, { headers: { 'Svc-Delay': '1m' } });
      const notBefore = Math.floor(clock.now() / 1000) + 30;
      await publish(`${dest.url}/b`, {
        headers: { 'Svc-Delay': '1h', 'Svc-Not-Before': String(notBefore) },
      });
      expect(await t.ferry.engine.runOnce()).toBe(0);
      clock.advance(30_000);
      expect(await t.ferry.engine.runOnce()).toBe(1);
      expect(dest.requests[0]?.path).toBe('/b');
      clock.advance(30_000);
      expect(await t.ferry.engine.runOnce()).toBe(1);
      expect(dest.requests[1]?.path).toBe('/a');
    });

    it('forwards all incoming headers with Svc-Header-Forward, except Authorization and Svc-*', async () => {
      await publish(`${dest.url}/hook`, {
        body: 'x',
        headers: {
          'Svc-Header-Forward': 'true',
          'X-Webhook-Id': 'wh_1',
          'X-Other': 'two',
          'Svc-Retries': '1',
        },
      });
      await t.ferry.engine.runOnce();
      const [req] = await dest.waitFor(1);
      expect(req?.headers['x-webhook-id']).toBe('wh_1');
      expect(req?.headers['x-other']).toBe('two');
      expect(req?.headers['authorization']).toBeUndefined(); // Ferry's own token stays with Ferry
      expect(req?.headers['svc-retries']).toBeUndefined();
      expect(req?.headers['svc-header-forward']).toBeUndefined();
    });

    it('refuses header values above U+00FF at publish time and delivers Latin-1 ones', async () => {
      // undici refuses a header value with a character above U+00FF on every attempt, so each
      // surface that sets one must refuse it with a 400 naming the header, nothing stored.
      const json = (method: string, body: unknown): RequestInit => ({
        method,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      const refused: [string, Promise<Response>, RegExp][] = [
        [
          'query form',
          t.api(`/v2/publish/${dest.url}/u1?svc-forward-x-q=%E2%82%AC`, { method: 'POST' }),
          /Svc-Forward-X-Q.*U\+00FF/,
        ],
        [
          'batch forward',
          t.api(
            '/v2/batch',
            json('POST', [
              { destination: `${dest.url}/u2`, headers: { 'Svc-Forward-X-J': '日本' } },
            ]),
          ),
          /Svc-Forward-X-J.*U\+00FF/,
        ],
        [
          'batch content type',
          t.api(
            '/v2/batch',
            json('POST', [
              {
                destination: `${dest.url}/u3`,
                headers: { 'Content-Type': 'text/plain; name=日本' },
              },
            ]),
          ),
          /Content-Type.*U\+00FF/,
        ],
        [
          'batch callback forward',
          t.api(
            '/v2/batch',
            json('POST', [
              {
                destination: `${dest.url}/u5`,
                headers: { 'Svc-Callback': `${dest.url}/cb`, 'Svc-Callback-Forward-X': '€' },
              },
            ]),
          ),
          /Svc-Callback-Forward-X.*U\+00FF/,
        ],
      ];
      for (const [name, pending, pattern] of refused) {
        const res = await pending;
        const body = (await res.json()) as { error?: string };
        expect([name, res.status]).toEqual([name, 400]);
        expect(body.error).toMatch(pattern);
      }
      await t.api(
        '/v2/topics/ugrp/endpoints',
        json('POST', { endpoints: [{ url: `${dest.url}/u4` }] }),
      );
      const patch = await t.api(
        '/v2/topics/ugrp',
        json('PATCH', { headers: { 'X-Team': '日本' } }),
      );
      expect(patch.status).toBe(400);
      expect(((await patch.json()) as { error: string }).error).toMatch(/X-Team.*U\+00FF/);
      // A Ferry setting in the defaults is not sent, so it may hold any printable character.
      const label = await t.api(
        '/v2/topics/ugrp',
        json('PATCH', { headers: { 'Svc-Label': '日本' } }),
      );
      expect(label.status).toBe(200);
      expect(await t.ferry.engine.runOnce()).toBe(0);

      // Latin-1 is what undici sends (one byte each): it keeps working from the query and JSON.
      const ok = await t.api(`/v2/publish/${dest.url}/latin?svc-forward-x-q=%C3%BC`, {
        method: 'POST',
      });
      expect(ok.status).toBe(200);
      const batch = await t.api(
        '/v2/batch',
        json('POST', [
          { destination: `${dest.url}/latin2`, headers: { 'Svc-Forward-X-J': 'café' } },
        ]),
      );
      expect(batch.status).toBe(200);
      expect(await t.ferry.engine.runOnce()).toBe(2);
      const got = await dest.waitFor(2);
      const byPath = new Map(got.map((r) => [r.path, r.headers]));
      expect(byPath.get('/latin')?.['x-q']).toBe('ü');
      expect(byPath.get('/latin2')?.['x-j']).toBe('café');
    });

    it('reads settings from lowercase query parameters and strips them from the destination', async () => {
      const token = t.token;
      const res = await fetch(
        `${t.url}/v2/publish/${dest.url}/hook?keep=1&queue_token=${encodeURIComponent(token)}&svc-delay=10s&svc-forward-x-a=b`,
        { method: 'POST', body: 'hi' },
      );
      expect(res.status).toBe(200);
      expect(await t.ferry.engine.runOnce()).toBe(0);
      clock.advance(10_000);
      expect(await t.ferry.engine.runOnce()).toBe(1);
      expect(dest.requests[0]?.path).toBe('/hook?keep=1');
      expect(dest.requests[0]?.headers['x-a']).toBe('b');
    });
  });

  describe('deduplication', () => {
    it('answers 202 with the first message id for a repeated deduplication id within 10 minutes', async () => {
      const headers = { 'Svc-Deduplication-Id': 'order-42' };
      const first = await publish(`${dest.url}/x`, { body: 'a', headers });
      const second = await publish(`${dest.url}/x`, { body: 'b', headers });
      expect(first.status).toBe(200);
      expect(first.json).toEqual({
        messageId: expect.stringMatching(/^msg_/),
        deduplicated: false,
      });
      expect(second.status).toBe(202);
      expect(second.json).toEqual({ messageId: first.json.messageId, deduplicated: true });
      clock.advance(10 * 60_000 + 1);
      const third = await publish(`${dest.url}/x`, { body: 'c', headers });
      expect(third.status).toBe(200);
      expect(third.json.messageId).not.toBe(first.json.messageId);
    });

    it('deduplicates on content when asked', async () => {
      const headers = { 'Svc-Content-Based-Deduplication': 'true', 'content-type': 'text/plain' };
      const a = await publish(`${dest.url}/x`, { body: 'same', headers });
      const b = await publish(`${dest.url}/x`, { body: 'same', headers });
      const c = await publish(`${dest.url}/x`, { body: 'different', headers });
      expect(b.status).toBe(202);
      expect(b.json.messageId).toBe(a.json.messageId);
      expect(c.status).toBe(200);
      expect(await t.ferry.engine.runOnce()).toBe(2);
    });
  });
});
