/**
 * URL groups end to end against real receivers: managing groups, fan-out with per-endpoint
 * retries and DLQ entries, default headers, webhook intake through a plain URL, batch publish and
 * the plan limits. Time is a manual clock; the engine is driven by `runOnce()`.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/core/clock.js';
import { STORAGES, startFerry, type TestFerry } from './helpers/ferry.js';
import { startReceiver, type Receiver } from './helpers/receiver.js';

type Json = Record<string, unknown>;

describe.each(STORAGES)('on %s', (storage) => {
  let t: TestFerry;
  let clock: ManualClock;
  let dests: Receiver[];

  beforeEach(async () => {
    clock = new ManualClock(Date.now());
    t = await startFerry({ clock, engine: false, storage, plan: 'free' });
    dests = await Promise.all([startReceiver(), startReceiver(), startReceiver()]);
  });
  afterEach(async () => {
    await t.close();
    await Promise.all(dests.map((d) => d.close()));
  });

  async function call(method: string, path: string, body?: unknown, headers = {}) {
    const res = await t.api(path, {
      method,
      headers,
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, json: (text === '' ? undefined : JSON.parse(text)) as unknown };
  }

  const addEndpoints = (name: string, endpoints: Json[]) =>
    call('POST', `/v2/topics/${name}/endpoints`, { endpoints });

  /** Runs the engine until nothing is due now. */
  async function drain(): Promise<void> {
    while ((await t.ferry.engine.runOnce()) > 0);
  }

  describe('managing groups', () => {
    it('add creates the group; list/get show endpoints in order; remove and delete', async () => {
      const [a, b, c] = dests.map((d) => `${d.url}/hook`);
      expect((await addEndpoints('orders', [{ url: a, name: 'first' }, { url: b }])).status).toBe(
        200,
      );
      // The same URL again is the same endpoint; a third one is appended.
      await addEndpoints('orders', [{ url: b }, { url: c, name: 'third' }]);

      const got = await call('GET', '/v2/topics/orders');
      expect(got.status).toBe(200);
      expect(got.json).toMatchObject({
        name: 'orders',
        endpoints: [{ url: a, name: 'first' }, { url: b }, { url: c, name: 'third' }],
      });
      const group = got.json as { createdAt: number; updatedAt: number };
      expect(group.createdAt).toBe(clock.now());
      expect(group.updatedAt).toBe(clock.now());

      await addEndpoints('other', [{ url: a }]);
      const list = await call('GET', '/v2/topics');
      expect((list.json as Json[]).map((g) => g.name)).toEqual(['orders', 'other']);

      // Remove by name and by URL.
      const removed = await call('DELETE', '/v2/topics/orders/endpoints', {
        endpoints: [{ name: 'first' }, { url: b }],
      });
      expect(removed.status).toBe(200);
      expect((await call('GET', '/v2/topics/orders')).json).toMatchObject({
        endpoints: [{ url: c, name: 'third' }],
      });
      // Removing the last endpoint deletes the group.
      await call('DELETE', '/v2/topics/orders/endpoints', { endpoints: [{ url: c }] });
      expect((await call('GET', '/v2/topics/orders')).status).toBe(404);

      expect((await call('DELETE', '/v2/topics/other')).status).toBe(200);
      expect((await call('DELETE', '/v2/topics/other')).status).toBe(404);
      expect((await call('GET', '/v2/topics')).json).toEqual([]);
    });

    it('bad names and bodies are 400s naming the problem; unknown groups 404', async () => {
      const bad = await addEndpoints('bad%20name', [{ url: dests[0]?.url }]);
      expect(bad.status).toBe(400);
      expect(bad.json).toEqual({
        error: expect.stringMatching(/invalid URL group name "bad name"/),
      });

      const noUrl = await addEndpoints('g', [{ name: 'x' }]);
      expect(noUrl).toEqual({
        status: 400,
        json: { error: expect.stringMatching(/endpoints\[0\]: "url" is required/) },
      });
      const notJson = await call('POST', '/v2/topics/g/endpoints', '{nope');
      expect(notJson.status).toBe(400);
      expect(notJson.json).toEqual({ error: expect.stringMatching(/invalid JSON body/) });

      await addEndpoints('g', [{ url: `${dests[0]?.url}/a`, name: 'n' }]);
      const taken = await addEndpoints('g', [{ url: `${dests[0]?.url}/b`, name: 'n' }]);
      expect(taken.status).toBe(400);
      expect(taken.json).toEqual({
        error: expect.stringMatching(/endpoint name "n" is already used/),
      });

      const missing = await call('DELETE', '/v2/topics/g/endpoints', {
        endpoints: [{ name: 'zz' }],
      });
      expect(missing.status).toBe(404);
      expect((await call('PATCH', '/v2/topics/nope', { headers: {} })).status).toBe(404);

      const publish = await call('POST', '/v2/publish/nope', 'x');
      expect(publish).toEqual({
        status: 404,
        json: { error: 'URL group "nope" not found' },
      });
    });

    it('max_topics and max_endpoints_per_topic are 412s naming the limit', async () => {
      const { max_topics, max_endpoints_per_topic } = t.ferry.accounts.limits(t.account);
      for (let i = 0; i < max_topics; i++) {
        expect((await addEndpoints(`g${i}`, [{ url: `${dests[0]?.url}/${i}` }])).status).toBe(200);
      }
      const tooMany = await addEndpoints('one-more', [{ url: `${dests[0]?.url}/x` }]);
      expect(tooMany.status).toBe(412);
      expect(tooMany.json).toEqual({
        error: expect.stringMatching(new RegExp(`max_topics is ${max_topics}`)),
      });
      // Adding to an existing group is not a new topic.
      expect((await addEndpoints('g0', [{ url: `${dests[0]?.url}/y` }])).status).toBe(200);

      const endpoints = Array.from({ length: max_endpoints_per_topic }, (_, i) => ({
        url: `${dests[0]?.url}/e${i}`,
      }));
      const big = await addEndpoints('g1', endpoints);
      expect(big.status).toBe(412);
      expect(big.json).toEqual({
        error: expect.stringMatching(
          new RegExp(`max_endpoints_per_topic \\(${max_endpoints_per_topic}\\)`),
        ),
      });
      // Nothing of the refused request was stored.
      expect((await call('GET', '/v2/topics/g1')).json).toMatchObject({ endpoints: [{}] });
    });
  });

  describe('publishing to a group', () => {
    it('fans out: one message per endpoint; a failing endpoint retries and lands in the DLQ alone', async () => {
      const [ok1, failing, ok2] = dests as [Receiver, Receiver, Receiver];
      failing.respond(() => ({ status: 500, body: 'down' }));
      await addEndpoints('orders', [
        { url: `${ok1.url}/a`, name: 'alpha' },
        { url: `${failing.url}/b`, name: 'broken' },
        { url: `${ok2.url}/c` },
      ]);

      const res = await call('POST', '/v2/publish/orders', '{"order":1}', {
        'content-type': 'application/json',
        'Svc-Retries': '2',
        'Svc-Retry-Delay': '1000',
      });
      expect(res.status).toBe(200);
      const results = res.json as { messageId: string; url: string }[];
      expect(results.map((r) => r.url)).toEqual([
        `${ok1.url}/a`,
        `${failing.url}/b`,
        `${ok2.url}/c`,
      ]);
      expect(new Set(results.map((r) => r.messageId)).size).toBe(3);

      // Each message is readable with its topic and endpoint name before delivery.
      const stored = await call('GET', `/v2/messages/${results[0]?.messageId}`);
      expect(stored.json).toMatchObject({
        topicName: 'orders',
        endpointName: 'alpha',
        maxRetries: 2,
      });

      expect(await t.ferry.engine.runOnce()).toBe(3);
      const [a] = await ok1.waitFor(1);
      const [c] = await ok2.waitFor(1);
      expect(a?.headers['svc-topic-name']).toBe('orders');
      expect(a?.headers['svc-endpoint-name']).toBe('alpha');
      expect(c?.headers['svc-topic-name']).toBe('orders');
      expect(c?.headers['svc-endpoint-name']).toBeUndefined();
      expect(a?.body.toString()).toBe('{"order":1}');

      // The failing endpoint retries on its own schedule (twice), then goes to the DLQ.
      for (let i = 0; i < 2; i++) {
        clock.advance(1_000);
        expect(await t.ferry.engine.runOnce()).toBe(1);
      }
      expect(failing.requests.map((r) => r.headers['svc-retried'])).toEqual(['0', '1', '2']);
      expect(failing.requests.every((r) => r.headers['svc-endpoint-name'] === 'broken')).toBe(true);
      expect(ok1.requests).toHaveLength(1);
      expect(ok2.requests).toHaveLength(1);

      const dlq = (await call('GET', '/v2/dlq?topicName=orders')).json as { messages: Json[] };
      expect(dlq.messages).toHaveLength(1);
      expect(dlq.messages[0]).toMatchObject({
        messageId: results[1]?.messageId,
        topicName: 'orders',
        endpointName: 'broken',
        url: `${failing.url}/b`,
        responseStatus: 500,
      });

      const delivered = (await call('GET', '/v2/events?topicName=orders&state=DELIVERED')).json as {
        events: Json[];
      };
      expect(delivered.events.map((e) => e.endpointName).sort()).toEqual(['alpha', undefined]);
      expect(delivered.events.every((e) => e.topicName === 'orders')).toBe(true);
    });

    it('applies the group default headers; a header of the publish wins', async () => {
      const [d] = dests as [Receiver];
      await addEndpoints('g', [{ url: `${d.url}/x` }]);
      const patched = await call('PATCH', '/v2/topics/g', {
        headers: {
          'Svc-Forward-X-Team': 'payments',
          'Svc-Method': ['PUT'],
          'Svc-Retries': '1',
          'X-Plain-Default': 'yes',
        },
      });
      expect(patched.status).toBe(200);
      expect(patched.json).toMatchObject({
        headers: {
          'Svc-Forward-X-Team': ['payments'],
          'Svc-Method': ['PUT'],
          'Svc-Retries': ['1'],
          'X-Plain-Default': ['yes'],
        },
      });

      const [first] = (await call('POST', '/v2/publish/g', 'a')).json as { messageId: string }[];
      const [second] = (
        await call('POST', '/v2/publish/g', 'b', {
          'Svc-Method': 'PATCH',
          'Svc-Forward-X-Team': 'ops',
        })
      ).json as { messageId: string }[];
      expect((await call('GET', `/v2/messages/${first?.messageId}`)).json).toMatchObject({
        maxRetries: 1,
      });
      await drain();
      const [r1, r2] = await d.waitFor(2);
      const byBody = (body: string) => [r1, r2].find((r) => r?.body.toString() === body);
      expect(byBody('a')?.method).toBe('PUT');
      expect(byBody('a')?.headers['x-team']).toBe('payments');
      expect(byBody('a')?.headers['x-plain-default']).toBe('yes');
      expect(byBody('b')?.method).toBe('PATCH');
      expect(byBody('b')?.headers['x-team']).toBe('ops');
      expect(second?.messageId).toMatch(/^msg_/);

      // A default that would be a bad publish header is refused when set.
      const bad = await call('PATCH', '/v2/topics/g', { headers: { 'Svc-Retries': 'lots' } });
      expect(bad).toEqual({
        status: 400,
        json: { error: expect.stringMatching(/invalid Svc-Retries "lots"/) },
      });
      // An empty object clears the defaults.
      const cleared = await call('PATCH', '/v2/topics/g', { headers: {} });
      expect((cleared.json as Json).headers).toBeUndefined();
    });

    it('a deduplication id delivers to each endpoint once', async () => {
      await addEndpoints(
        'g',
        dests.map((d) => ({ url: d.url })),
      );
      const first = await call('POST', '/v2/publish/g', 'x', { 'Svc-Deduplication-Id': 'd1' });
      const again = await call('POST', '/v2/publish/g', 'x', { 'Svc-Deduplication-Id': 'd1' });
      expect(first.status).toBe(200);
      const ids = (first.json as Json[]).map((r) => r.messageId);
      expect(again.json).toEqual(
        ids.map((messageId, i) => ({ messageId, url: dests[i]?.url, deduplicated: true })),
      );
      await drain();
      expect(dests.map((d) => d.requests.length)).toEqual([1, 1, 1]);
    });
  });

  describe('webhook intake', () => {
    it('a plain fetch of a URL with query settings only: group destination, header forwarding, retries, delay', async () => {
      const [d1, d2] = dests as [Receiver, Receiver];
      await addEndpoints('github', [{ url: `${d1.url}/hooks/gh?source=ferry` }, { url: d2.url }]);
      await call('PATCH', '/v2/topics/github', { headers: { 'Svc-Header-Forward': 'true' } });

      // What a webhook provider does: POST its own body and headers to the URL it was given.
      const intake = `${t.url}/v2/publish/github?queue_token=${encodeURIComponent(t.token)}&svc-retries=0&svc-delay=10s`;
      const res = await fetch(intake, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-github-event': 'push' },
        body: '{"ref":"main"}',
      });
      expect(res.status).toBe(200);
      expect(await res.json()).toHaveLength(2);

      expect(await t.ferry.engine.runOnce()).toBe(0); // delayed by svc-delay=10s
      clock.advance(10_000);
      expect(await t.ferry.engine.runOnce()).toBe(2);
      const [got] = await d1.waitFor(1);
      expect(got?.path).toBe('/hooks/gh?source=ferry');
      expect(got?.body.toString()).toBe('{"ref":"main"}');
      expect(got?.headers['content-type']).toBe('application/json');
      expect(got?.headers['x-github-event']).toBe('push');
      expect(got?.headers['svc-topic-name']).toBe('github');
      const message = await call('GET', '/v2/events?state=CREATED');
      const created = (message.json as { events: Json[] }).events[0];
      expect(created?.maxRetries).toBe(0);
    });

    it("a URL destination: Ferry's parameters are stripped, the destination's own kept, headers forwarded", async () => {
      const [d] = dests as [Receiver];
      const target = `${d.url}/in?a=1&b=two`;
      const intake = `${t.url}/v2/publish/${target}&qstash_token=${encodeURIComponent(t.token)}&svc-header-forward=true&svc-method=PUT`;
      const res = await fetch(intake, {
        method: 'POST',
        headers: { 'x-signature-from-provider': 'sig', authorization: 'Basic cHJvdmlkZXI6eA==' },
        body: 'payload',
      });
      expect(res.status).toBe(200);
      await drain();
      const [got] = await d.waitFor(1);
      expect(got?.method).toBe('PUT');
      expect(got?.path).toBe('/in?a=1&b=two');
      expect(got?.headers['x-signature-from-provider']).toBe('sig');
      // The provider's own Authorization (not Ferry's Bearer token) is forwarded.
      expect(got?.headers.authorization).toBe('Basic cHJvdmlkZXI6eA==');
      expect(got?.body.toString()).toBe('payload');
    });
  });

  describe('batch', () => {
    it('one result per entry in order, nested for a group', async () => {
      const [d1, d2, d3] = dests as [Receiver, Receiver, Receiver];
      await addEndpoints('pair', [{ url: d2.url }, { url: d3.url, name: 'three' }]);
      const res = await call('POST', '/v2/batch', [
        { destination: `${d1.url}/one?k=v`, body: 'first', headers: { 'Svc-Method': 'PUT' } },
        { destination: 'pair', body: 'to the group', headers: { 'content-type': 'text/plain' } },
        { destination: `${d1.url}/three`, headers: { 'svc-forward-x-a': ['1', '2'] } },
      ]);
      expect(res.status).toBe(200);
      const out = res.json as unknown[];
      expect(out).toHaveLength(3);
      expect(out[0]).toEqual({ messageId: expect.stringMatching(/^msg_/), deduplicated: false });
      expect(out[1]).toEqual([
        { messageId: expect.stringMatching(/^msg_/), url: d2.url, deduplicated: false },
        { messageId: expect.stringMatching(/^msg_/), url: d3.url, deduplicated: false },
      ]);
      expect(out[2]).toEqual({ messageId: expect.stringMatching(/^msg_/), deduplicated: false });

      await drain();
      expect(d1.requests.map((r) => [r.method, r.path, r.body.toString()])).toEqual(
        expect.arrayContaining([
          ['PUT', '/one?k=v', 'first'],
          ['POST', '/three', ''],
        ]),
      );
      expect(d1.requests.find((r) => r.path === '/three')?.headers['x-a']).toBe('1, 2');
      expect(d3.requests[0]?.headers['svc-endpoint-name']).toBe('three');
      expect(d2.requests[0]?.body.toString()).toBe('to the group');
      expect(d2.requests[0]?.headers['content-type']).toBe('text/plain');
    });

    it.each([
      [
        { destination: 'ftp://nope', body: 'x' },
        400,
        /^entry 1: invalid destination "ftp:\/\/nope"/,
      ],
      [
        { destination: 'https://example.com/x', headers: { 'Svc-Retries': '99' } },
        412,
        /^entry 1: .*max_retries/,
      ],
      [{ destination: 'missing-group' }, 404, /^entry 1: URL group "missing-group" not found$/],
      [{ body: 'no destination' }, 400, /^entry 1: "destination" is required/],
    ])(
      'an invalid entry (%o) fails the batch with %i, naming it; nothing is stored',
      async (bad, status, error) => {
        const [d1] = dests as [Receiver];
        const res = await call('POST', '/v2/batch', [
          { destination: `${d1.url}/never`, body: 'valid' },
          bad,
          { destination: 'also-missing' },
        ]);
        expect(res.status).toBe(status);
        expect((res.json as Json).error).toMatch(error);
        const events = await t.client.events.list({ filter: { url: `${d1.url}/never` } });
        expect(events.events).toEqual([]);
      },
    );

    it('is a 400 when the body is not a JSON array', async () => {
      for (const body of ['{"destination":"x"}', 'nope', '']) {
        const res = await call('POST', '/v2/batch', body);
        expect(res.status).toBe(400);
        expect((res.json as Json).error).toMatch(/JSON|array|body/);
      }
    });
  });

  describe('the SDK', () => {
    it('manages groups, publishes to one, and batches', async () => {
      const { client } = t;
      const [d1, d2] = dests as [Receiver, Receiver];
      const group = await client.urlGroups.addEndpoints('sdk', [
        { url: d1.url, name: 'one' },
        { url: d2.url },
      ]);
      expect(group.endpoints).toEqual([{ url: d1.url, name: 'one' }, { url: d2.url }]);
      await client.urlGroups.setHeaders('sdk', { 'Svc-Forward-X-From-Group': 'g' });
      expect((await client.urlGroups.get('sdk')).headers).toEqual({
        'Svc-Forward-X-From-Group': ['g'],
      });
      expect((await client.urlGroups.list()).map((g) => g.name)).toEqual(['sdk']);

      const published = await client.publish({
        destination: 'sdk',
        body: 'fan',
        redactFields: ['body'],
      });
      expect(Array.isArray(published) && published.map((p) => p.url)).toEqual([d1.url, d2.url]);

      await expect(
        client.batch([{ destination: `${d1.url}/b` }, { destination: 'no-such-group' }]),
      ).rejects.toMatchObject({ status: 404, message: expect.stringMatching(/^entry 1: /) });
      const batch = await client.batch([
        { destination: `${d1.url}/b`, body: 'one', retries: 0 },
        { destination: 'sdk', body: 'two' },
      ]);
      expect(batch[0]).toEqual({ messageId: expect.stringMatching(/^msg_/), deduplicated: false });
      expect(batch[1]).toHaveLength(2);

      await drain();
      expect(d1.requests.map((r) => r.body.toString()).sort()).toEqual(['fan', 'one', 'two']);
      expect(d2.requests.every((r) => r.headers['x-from-group'] === 'g')).toBe(true);

      const remaining = await client.urlGroups.removeEndpoints('sdk', [{ name: 'one' }]);
      expect(remaining?.endpoints).toEqual([{ url: d2.url }]);
      expect(await client.urlGroups.removeEndpoints('sdk', [{ url: d2.url }])).toBeUndefined();
      await expect(client.urlGroups.get('sdk')).rejects.toMatchObject({ status: 404 });
    });
  });
});
