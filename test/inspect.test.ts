/** Inspecting and acting on messages, the events log, the DLQ and signing keys, via the SDK. */
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

  const idOf = (r: unknown): string => (r as { messageId: string }).messageId;

  describe('messages', () => {
    it('shows a pending message with every field, then cancels it', async () => {
      const r = await t.client.publish({
        destination: `${dest.url}/orders`,
        body: '{"a":1}',
        contentType: 'application/json',
        headers: { 'test-header': 'v' },
        delay: '1h',
        retries: 2,
        retryDelay: '1000 * retried',
        timeout: '30s',
        label: ['billing', 'eu'],
        flowControl: { key: 'k1', parallelism: 2, rate: 10, period: '1m' },
      });
      const m = await t.client.messages.get(idOf(r));
      expect(m).toMatchObject({
        messageId: idOf(r),
        url: `${dest.url}/orders`,
        method: 'POST',
        header: { 'Content-Type': ['application/json'], 'Test-Header': ['v'] },
        body: '{"a":1}',
        maxRetries: 2,
        retried: 0,
        notBefore: clock.now() + 3_600_000,
        createdAt: clock.now(),
        callerIP: '127.0.0.1',
        label: 'billing',
        labels: ['billing', 'eu'],
        flowControlKey: 'k1',
        parallelism: 2,
        rate: 10,
        period: 60,
        retryDelayExpression: '1000 * retried',
        timeout: 30,
      });

      expect(await t.client.messages.cancel(idOf(r))).toEqual({ cancelled: 1 });
      await expect(t.client.messages.get(idOf(r))).rejects.toMatchObject({ status: 404 });
      clock.advance(3_600_000);
      expect(await t.ferry.engine.runOnce()).toBe(0);
      const { events } = await t.client.events.list({ filter: { messageId: idOf(r) } });
      expect(events.map((e) => e.state)).toEqual(['CANCELLED', 'CANCEL_REQUESTED', 'CREATED']);
    });

    it('shows a binary body as bodyBase64', async () => {
      const r = await t.client.publish({
        destination: `${dest.url}/b`,
        body: new Uint8Array([0xff, 0xfe]),
        delay: 60,
      });
      const m = (await t.client.messages.get(idOf(r))) as unknown as Record<string, unknown>;
      expect(m.bodyBase64).toBe(Buffer.from([0xff, 0xfe]).toString('base64'));
      expect(m.body).toBeUndefined();
    });

    it('cancels in bulk by filter and only what matches', async () => {
      const a = await t.client.publish({ destination: `${dest.url}/a`, label: 'x', delay: 60 });
      await t.client.publish({ destination: `${dest.url}/b`, label: 'y', delay: 60 });
      await t.client.publish({ destination: `${dest.url}/c`, label: 'x', delay: 60 });
      expect(await t.client.messages.cancelMany({ label: 'x' })).toEqual({ cancelled: 2 });
      await expect(t.client.messages.get(idOf(a))).rejects.toMatchObject({ status: 404 });
      expect(await t.client.messages.cancelMany({ path: '/b' })).toEqual({ cancelled: 1 });
      expect(await t.client.messages.cancelMany({})).toEqual({ cancelled: 0 });
    });
  });

  describe('events log', () => {
    it('filters by state, label, url and time, and pages with a cursor', async () => {
      for (let i = 0; i < 12; i++) {
        await t.client.publish({
          destination: `${dest.url}/p${i % 3}`,
          label: i % 2 ? 'odd' : 'even',
        });
        clock.advance(1);
      }
      await t.ferry.engine.runOnce();
      const delivered = await t.client.events.list({ filter: { state: 'DELIVERED' }, count: 100 });
      expect(delivered.events).toHaveLength(12);
      const odd = await t.client.events.list({ filter: { state: 'CREATED', label: 'odd' } });
      expect(odd.events).toHaveLength(6);
      const byUrl = await t.client.events.list({
        filter: { state: 'CREATED', url: `${dest.url}/p1` },
      });
      expect(byUrl.events).toHaveLength(4);
      const inProgress = await t.client.events.list({ filter: { state: 'IN_PROGRESS' } });
      expect(inProgress.events.every((e) => e.state === 'ACTIVE')).toBe(true);

      const seen: string[] = [];
      let cursor: string | undefined;
      let pages = 0;
      do {
        const page = await t.client.events.list({ filter: { state: 'CREATED' }, count: 5, cursor });
        seen.push(...page.events.map((e) => e.messageId));
        cursor = page.cursor;
        pages++;
      } while (cursor);
      expect(pages).toBe(3);
      expect(new Set(seen).size).toBe(12);

      // Every event carries the message body (base64) and header.
      expect(delivered.events[0]?.body).toBe('');
      const logs = (await (await t.api('/v2/logs?count=1')).json()) as {
        logs: unknown[];
        cursor: string;
      };
      expect(logs.logs).toHaveLength(1);
      expect(logs.cursor).not.toBe('');
    });
  });

  describe('dead-letter queue', () => {
    async function fail(n: number, label = 'l'): Promise<string[]> {
      dest.respond(() => ({ status: 500, body: 'nope' }));
      const ids: string[] = [];
      for (let i = 0; i < n; i++) {
        ids.push(
          idOf(
            await t.client.publish({
              destination: `${dest.url}/d${i}`,
              retries: 0,
              label,
              body: `b${i}`,
            }),
          ),
        );
        clock.advance(1);
      }
      await t.ferry.engine.runOnce();
      return ids;
    }

    it('lists with filters and a cursor, gets, deletes (404 the second time)', async () => {
      await fail(3, 'a');
      await fail(2, 'b');
      const all = await t.client.dlq.list({ count: 2 });
      expect(all.messages).toHaveLength(2);
      expect(all.cursor).toBeTruthy();
      const rest = await t.client.dlq.list({ count: 10, cursor: all.cursor });
      expect(rest.messages).toHaveLength(3);
      expect(rest.cursor).toBeUndefined();
      const b = await t.client.dlq.list({ filter: { label: 'b' } });
      expect(b.messages).toHaveLength(2);
      const byStatus = await t.client.dlq.list({ filter: { responseStatus: 500 } });
      expect(byStatus.messages).toHaveLength(5);

      const one = b.messages[0];
      expect(one).toBeDefined();
      const got = await t.client.dlq.get(one?.dlqId ?? '');
      expect(got).toMatchObject({
        dlqId: one?.dlqId,
        responseStatus: 500,
        responseBody: 'nope',
        label: 'b',
      });
      await t.client.dlq.delete(one?.dlqId ?? '');
      await expect(t.client.dlq.delete(one?.dlqId ?? '')).rejects.toMatchObject({ status: 404 });

      const deleted = await t.client.dlq.deleteMany({ filter: { label: 'a' } });
      expect(deleted.deleted).toBe(3);
      expect((await t.client.dlq.list({})).messages).toHaveLength(1);
    });

    it('retries one entry (201) with header overrides, and in bulk', async () => {
      await fail(3);
      const { messages } = await t.client.dlq.list({});
      dest.respond(() => ({ status: 200 }));
      const first = messages[0];
      const retried = await t.client.dlq.retry(first?.dlqId ?? '', {
        headers: { 'Svc-Retries': '4' },
      });
      expect(retried.messageId).toMatch(/^msg_/);
      const m = await t.client.messages.get(retried.messageId);
      expect(m.maxRetries).toBe(4);
      expect(m.body).toBe(first?.body);

      const bulk = await t.client.dlq.retryMany({ filter: {} });
      expect(bulk.responses).toHaveLength(2);
      expect((await t.client.dlq.list({})).messages).toHaveLength(0);
      const before = dest.requests.length;
      expect(await t.ferry.engine.runOnce()).toBe(3);
      expect(dest.requests.length - before).toBe(3);
    });
  });

  describe('signing keys', () => {
    it('rotates: next becomes current, and messages published before verify with the old pair', async () => {
      const before = await t.client.keys.get();
      expect(before).toEqual({
        current: t.account.currentSigningKey,
        next: t.account.nextSigningKey,
      });
      await t.client.publish({ destination: `${dest.url}/k`, body: 'signed' });
      const after = await t.client.keys.rotate();
      expect(after.current).toBe(before.next);
      expect(after.next).not.toBe(before.next);
      expect(await t.client.keys.get()).toEqual(after);

      await t.ferry.engine.runOnce();
      const [req] = await dest.waitFor(1);
      const oldPair = new Receiver({
        currentSigningKey: before.current,
        nextSigningKey: before.next,
      });
      await expect(
        oldPair.verify({
          signature: req?.headers['svc-signature'] as string,
          body: 'signed',
          url: req?.url,
        }),
      ).resolves.toBe(true);
      const newPair = new Receiver({
        currentSigningKey: after.current,
        nextSigningKey: after.next,
      });
      await expect(
        newPair.verify({
          signature: req?.headers['svc-signature'] as string,
          body: 'signed',
          url: req?.url,
        }),
      ).resolves.toBe(true);
    });
  });
});
