/**
 * With `--header-prefix Upstash`, the official `@upstash/qstash` Client and Receiver work against
 * Ferry unchanged: publish, message lookup and cancel, logs, the DLQ, URL groups, batch,
 * schedules and signature verification; and it maps Ferry's 429s to its rate-limit errors.
 */
import { Client, QstashDailyRatelimitError, QstashRatelimitError, Receiver } from '@upstash/qstash';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/core/clock.js';
import { createAccount } from '../src/cli/credentials.js';
import type { PlanName } from '../src/core/types.js';
import { startFerry, type TestFerry } from './helpers/ferry.js';
import { limitPlanArgs } from './helpers/limits.js';
import { startReceiver, type Receiver as Destination } from './helpers/receiver.js';

let t: TestFerry;
let clock: ManualClock;
let dest: Destination;
let client: Client;

beforeAll(async () => {
  clock = new ManualClock(Date.now());
  t = await startFerry({ clock, engine: false, args: ['--header-prefix', 'Upstash'] });
  dest = await startReceiver((req) => ({ status: req.path.startsWith('/broken') ? 500 : 200 }));
  client = new Client({ baseUrl: t.url, token: t.token, enableTelemetry: false, retry: false });
});
afterAll(async () => {
  await t.close();
  await dest.close();
});

describe('official @upstash/qstash Client in Upstash mode', () => {
  it('publishes JSON, and the official Receiver verifies the delivery', async () => {
    const { messageId } = await client.publishJSON({
      url: `${dest.url}/orders`,
      body: { orderId: 42 },
      headers: { 'X-Tenant': 'acme' },
      retries: 2,
    });
    expect(messageId).toMatch(/^msg_/);
    const message = await client.messages.get(messageId);
    expect(message).toMatchObject({ messageId, url: `${dest.url}/orders`, maxRetries: 2 });
    expect(message.header?.['X-Tenant']).toEqual(['acme']);

    await t.ferry.engine.runOnce();
    const [req] = await dest.waitFor(1);
    expect(req?.headers['x-tenant']).toBe('acme');
    expect(JSON.parse(req?.body.toString() ?? '')).toEqual({ orderId: 42 });
    const receiver = new Receiver({
      currentSigningKey: t.account.currentSigningKey,
      nextSigningKey: t.account.nextSigningKey,
    });
    await expect(
      receiver.verify({
        signature: req?.headers['upstash-signature'] as string,
        body: req?.body.toString() ?? '',
        url: req?.url,
      }),
    ).resolves.toBe(true);

    const { logs } = await client.logs({ filter: { messageId } });
    expect(logs.map((l) => l.state)).toEqual(['DELIVERED', 'ACTIVE', 'CREATED']);
  });

  it('cancels a delayed message', async () => {
    const { messageId } = await client.publish({ url: `${dest.url}/later`, body: 'x', delay: 60 });
    expect(await client.messages.cancel(messageId)).toEqual({ cancelled: 1 });
    await expect(client.messages.get(messageId)).rejects.toThrow();
  });

  it('lists, retries and deletes dead-letter entries', async () => {
    const { messageId } = await client.publish({
      url: `${dest.url}/broken`,
      body: 'y',
      retries: 0,
    });
    await t.ferry.engine.runOnce();
    const { messages } = await client.dlq.listMessages({ filter: { messageId } });
    expect(messages).toHaveLength(1);
    expect(messages[0]).toMatchObject({ messageId, responseStatus: 500 });
    const dlqId = messages[0]?.dlqId ?? '';
    const retried = await client.dlq.retry({ dlqIds: [dlqId] });
    expect(retried.responses).toHaveLength(1);
    await t.ferry.engine.runOnce(); // fails again → back in the DLQ under a new id
    const again = await client.dlq.listMessages({});
    expect(again.messages.length).toBeGreaterThan(0);
    const deleted = await client.dlq.delete({ dlqIds: again.messages.map((m) => m.dlqId) });
    expect(deleted.deleted).toBe(again.messages.length);
    expect((await client.dlq.listMessages({})).messages).toHaveLength(0);
  });

  it('manages URL groups, publishes to one (fan-out), and batches', async () => {
    await client.urlGroups.addEndpoints({
      name: 'sdk-group',
      endpoints: [{ url: `${dest.url}/g1`, name: 'first' }, { url: `${dest.url}/g2` }],
    });
    const group = await client.urlGroups.get('sdk-group');
    expect(group).toMatchObject({
      name: 'sdk-group',
      endpoints: [{ url: `${dest.url}/g1`, name: 'first' }, { url: `${dest.url}/g2` }],
    });
    expect((await client.urlGroups.list()).map((g) => g.name)).toContain('sdk-group');

    const fanned = await client.publishJSON({ urlGroup: 'sdk-group', body: { n: 1 } });
    expect(fanned).toHaveLength(2);
    expect(fanned[0]?.messageId).toMatch(/^msg_/);

    const batch = await client.batchJSON([
      { url: `${dest.url}/b1`, body: { b: 1 }, headers: { 'X-Batch': 'yes' } },
      { urlGroup: 'sdk-group', body: { b: 2 } },
    ]);
    expect(batch).toHaveLength(2);
    expect(batch[0]).toEqual({ messageId: expect.stringMatching(/^msg_/), deduplicated: false });
    expect(batch[1]).toHaveLength(2);

    const before = dest.requests.length;
    while ((await t.ferry.engine.runOnce()) > 0);
    const got = (await dest.waitFor(before + 5)).slice(before);
    expect(got.map((r) => r.path).sort()).toEqual(['/b1', '/g1', '/g1', '/g2', '/g2']);
    const toFirst = got.find((r) => r.path === '/g1');
    expect(toFirst?.headers['upstash-topic-name']).toBe('sdk-group');
    expect(toFirst?.headers['upstash-endpoint-name']).toBe('first');
    expect(got.find((r) => r.path === '/b1')?.headers['x-batch']).toBe('yes');

    await client.urlGroups.removeEndpoints({ name: 'sdk-group', endpoints: [{ name: 'first' }] });
    expect((await client.urlGroups.get('sdk-group')).endpoints).toEqual([
      { url: `${dest.url}/g2` },
    ]);
    await client.urlGroups.delete('sdk-group');
    await expect(client.urlGroups.get('sdk-group')).rejects.toThrow();
  });

  it('creates, reads, lists, pauses, resumes and deletes schedules; a tick is delivered', async () => {
    const { scheduleId } = await client.schedules.create({
      destination: `${dest.url}/cron`,
      cron: '*/10 * * * * ',
      body: JSON.stringify({ report: 'daily' }),
      headers: { 'test-header': 'test-value' },
      retries: 2,
      delay: 30,
      scheduleId: 'upstash-schedule.1',
    });
    expect(scheduleId).toBe('upstash-schedule.1');
    const schedule = await client.schedules.get(scheduleId);
    expect(schedule).toMatchObject({
      scheduleId,
      cron: '*/10 * * * *',
      destination: `${dest.url}/cron`,
      method: 'POST',
      isPaused: false,
      retries: 2,
      delay: 30,
      body: '{"report":"daily"}',
      header: { 'Content-Type': ['application/json'], 'Test-Header': ['test-value'] },
    });
    expect((await client.schedules.list()).map((s) => s.scheduleId)).toContain(scheduleId);

    await client.schedules.pause({ schedule: scheduleId });
    expect((await client.schedules.get(scheduleId)).isPaused).toBe(true);
    await client.schedules.resume({ schedule: scheduleId });
    const resumed = await client.schedules.get(scheduleId);
    expect(resumed.isPaused).toBe(false);

    clock.set(resumed.nextScheduleTime ?? 0);
    expect(await t.ferry.scheduler.runOnce()).toBe(1);
    clock.advance(30_000); // Upstash-Delay counts from the tick
    await t.ferry.engine.runOnce();
    const req = (await dest.waitFor(1)).find((r) => r.path === '/cron');
    expect(req?.headers['upstash-schedule-id']).toBe(scheduleId);
    expect(req?.headers['test-header']).toBe('test-value');

    await client.schedules.delete(scheduleId);
    await expect(client.schedules.get(scheduleId)).rejects.toThrow(/not found/);
  });

  it('queues: upsert, get, list, pause, resume, enqueue, enqueueJSON, delete', async () => {
    const queue = client.queue({ queueName: 'upstash-q' });
    await queue.upsert({ parallelism: 1 });
    await queue.pause();
    expect(await queue.get()).toMatchObject({ name: 'upstash-q', parallelism: 1, paused: true });
    await queue.resume();
    const first = await queue.enqueue({ url: `${dest.url}/q-first`, body: 'one' });
    const second = await queue.enqueueJSON({ url: `${dest.url}/q-second`, body: { n: 2 } });
    expect(first.messageId).toMatch(/^msg_/);
    expect(second.messageId).toMatch(/^msg_/);
    expect((await queue.get()).lag).toBe(2);
    expect((await client.queue().list()).map((q) => q.name)).toContain('upstash-q');
    const before = dest.requests.length;
    expect(await t.ferry.engine.runOnce()).toBe(1);
    expect(await t.ferry.engine.runOnce()).toBe(1);
    const paths = (await dest.waitFor(before + 2)).slice(before).map((r) => r.path);
    expect(paths).toEqual(['/q-first', '/q-second']);
    const key = await client.publishJSON({
      url: `${dest.url}/fc`,
      body: {},
      flowControl: { key: 'upstash-key', parallelism: 1 },
    });
    expect(key.messageId).toMatch(/^msg_/);
    const info = await client.flowControl.get('upstash-key');
    // The key had its slot free: the message started as it was published.
    expect(info).toMatchObject({
      flowControlKey: 'upstash-key',
      parallelismMax: 1,
      parallelismCount: 1,
      waitListSize: 0,
    });
    await queue.delete();
    await expect(queue.get()).rejects.toThrow(/not found/);
  });
});

describe('official Client and Ferry’s account limits', () => {
  const T0 = Date.UTC(2026, 5, 1, 9, 0, 0, 250);
  const limitClock = new ManualClock(T0);
  let limited: TestFerry;

  beforeAll(async () => {
    limited = await startFerry({
      clock: limitClock,
      engine: false,
      args: ['--header-prefix', 'Upstash', ...limitPlanArgs()],
    });
  });
  afterAll(() => limited.close());

  async function clientOf(plan: PlanName): Promise<Client> {
    const executor = limited.ferry.driver.executor;
    const { token } = await createAccount({ executor, plan, now: T0 });
    return new Client({ baseUrl: limited.url, token, enableTelemetry: false, retry: false });
  }

  it('max_requests_per_second → QstashRatelimitError with the Burst-RateLimit-* values', async () => {
    const sdk = await clientOf('paid'); // 3 requests per second
    for (let i = 0; i < 3; i++) await sdk.publish({ url: 'https://example.com/x', body: 'x' });
    const error: unknown = await sdk
      .publish({ url: 'https://example.com/x' })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(QstashRatelimitError);
    expect(error).not.toBeInstanceOf(QstashDailyRatelimitError);
    expect(error).toMatchObject({
      limit: '3',
      remaining: '0',
      reset: String(Math.floor(T0 / 1000) + 1),
    });
  });

  it('max_requests_per_day_hard → QstashDailyRatelimitError with the RateLimit-* values', async () => {
    const sdk = await clientOf('free'); // soft 4, hard 6 per UTC day
    for (let i = 0; i < 6; i++) {
      limitClock.advance(1_000); // stay clear of the per-second limit
      await sdk.publish({ url: 'https://example.com/x', body: 'x' });
    }
    const error: unknown = await sdk
      .publish({ url: 'https://example.com/x' })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(QstashDailyRatelimitError);
    expect(error).toMatchObject({
      limit: '6',
      remaining: '0',
      reset: String(Date.UTC(2026, 5, 2) / 1000),
    });
  });
});
