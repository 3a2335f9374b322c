/**
 * Cron schedules end to end: the API, the scheduler driven by `runOnce()` with a manual clock,
 * real storage, and deliveries to a real HTTP receiver on 127.0.0.1.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/core/clock.js';
import { createAccount } from '../src/cli/credentials.js';
import { Scheduler } from '../src/scheduler/scheduler.js';
import type { Executor } from '../src/storage/driver.js';
import { silentLogger } from '../src/core/logger.js';
import { STORAGES, startFerry, type TestFerry } from './helpers/ferry.js';
import { startReceiver, type Receiver as Destination } from './helpers/receiver.js';

const MINUTE = 60_000;
/** 2026-01-01T00:00:30Z: half a minute past a five-minute tick. */
const START = Date.UTC(2026, 0, 1, 0, 0, 30);
const at = (iso: string): number => Date.parse(iso);

type Json = Record<string, unknown>;

describe.each(STORAGES)('schedules on %s', (storage) => {
  let t: TestFerry;
  let clock: ManualClock;
  let dest: Destination;

  beforeEach(async () => {
    clock = new ManualClock(START);
    t = await startFerry({ clock, engine: false, storage });
    dest = await startReceiver();
  });
  afterEach(async () => {
    await t.close();
    await dest.close();
  });

  async function create(
    destination: string,
    headers: Record<string, string>,
    body?: string,
  ): Promise<{ status: number; json: Json }> {
    const res = await t.api(`/v2/schedules/${destination}`, { method: 'POST', headers, body });
    return { status: res.status, json: (await res.json()) as Json };
  }

  async function get(id: string): Promise<Json> {
    const res = await t.api(`/v2/schedules/${id}`);
    expect(res.status).toBe(200);
    return (await res.json()) as Json;
  }

  /** CREATED events of the schedule's messages, oldest first. */
  async function produced(scheduleId: string): Promise<Json[]> {
    const res = await t.api(`/v2/events?scheduleId=${scheduleId}&state=CREATED&count=1000`);
    return ((await res.json()) as { events: Json[] }).events.reverse();
  }

  const fire = () => t.ferry.scheduler.runOnce();

  it('a URL-group destination fans out at each tick, with callbacks carrying scheduleId and redaction in GET', async () => {
    const hooks = await startReceiver();
    try {
      await t.api('/v2/topics/nightly/endpoints', {
        method: 'POST',
        body: JSON.stringify({
          endpoints: [{ url: `${dest.url}/a`, name: 'a' }, { url: `${dest.url}/b` }],
        }),
      });
      await t.api('/v2/topics/nightly', {
        method: 'PATCH',
        body: JSON.stringify({ headers: { 'Svc-Forward-X-From-Group': 'yes' } }),
      });
      const { status, json } = await create(
        'nightly',
        {
          'Svc-Cron': '*/5 * * * *',
          'Svc-Callback': `${hooks.url}/cb`,
          'Svc-Redact-Fields': 'body',
        },
        'secret report',
      );
      expect(status).toBe(200);
      const scheduleId = json.scheduleId as string;
      const shown = await get(scheduleId);
      expect(shown).toMatchObject({ destination: 'nightly', callback: `${hooks.url}/cb` });
      expect(shown.body).toMatch(/^REDACTED:[0-9a-f]{64}$/);

      clock.set(at('2026-01-01T00:05:00Z'));
      expect(await fire()).toBe(1);
      expect(Object.keys((await get(scheduleId)).lastScheduleStates as Json)).toHaveLength(2);
      // Produced messages are metered: one per endpoint.
      expect(await t.ferry.meter.monthCount(t.account.id, 'messages', clock.now())).toBe(2);
      while ((await t.ferry.engine.runOnce()) > 0);
      const got = await dest.waitFor(2);
      expect(got.map((r) => r.path).sort()).toEqual(['/a', '/b']);
      for (const req of got) {
        expect(req.headers['svc-schedule-id']).toBe(scheduleId);
        expect(req.headers['svc-topic-name']).toBe('nightly');
        expect(req.headers['x-from-group']).toBe('yes');
        expect(req.body.toString()).toBe('secret report');
      }
      const callbacks = (await hooks.waitFor(2)).map((r) => JSON.parse(r.body.toString()) as Json);
      expect(callbacks.map((c) => c.scheduleId)).toEqual([scheduleId, scheduleId]);

      // A group deleted later: its ticks produce nothing, the schedule keeps its rhythm.
      await t.api('/v2/topics/nightly', { method: 'DELETE' });
      clock.set(at('2026-01-01T00:10:00Z'));
      expect(await fire()).toBe(1);
      expect((await get(scheduleId)).nextScheduleTime).toBe(at('2026-01-01T00:15:00Z'));
      expect(await produced(scheduleId)).toHaveLength(2);
    } finally {
      await hooks.close();
    }
  });

  it('a schedule to a URL group that does not exist is a 404', async () => {
    const { status, json } = await create('no-such-group', { 'Svc-Cron': '* * * * *' });
    expect(status).toBe(404);
    expect(json.error).toBe('URL group "no-such-group" not found');
  });

  it('fires once per tick; the delivery carries Svc-Schedule-Id and the stored request', async () => {
    const { status, json } = await create(
      `${dest.url}/cron?x=1`,
      {
        'Svc-Cron': '*/5 * * * *',
        'content-type': 'text/plain',
        'Svc-Forward-X-Tenant': 'acme',
        'Svc-Method': 'PUT',
        'Svc-Retries': '1',
        'Svc-Label': 'nightly',
      },
      'tick body',
    );
    expect(status).toBe(200);
    const scheduleId = json.scheduleId as string;
    expect(scheduleId).toMatch(/^scd_/);
    expect((await get(scheduleId)).nextScheduleTime).toBe(at('2026-01-01T00:05:00Z'));

    expect(await fire()).toBe(0); // 00:00:30: nothing due
    clock.set(at('2026-01-01T00:05:00Z'));
    expect(await fire()).toBe(1);
    expect(await fire()).toBe(0); // the same tick never fires twice

    expect(await t.ferry.engine.runOnce()).toBe(1);
    const [req] = await dest.waitFor(1);
    expect(req?.method).toBe('PUT');
    expect(req?.path).toBe('/cron?x=1');
    expect(req?.body.toString()).toBe('tick body');
    expect(req?.headers['content-type']).toBe('text/plain');
    expect(req?.headers['x-tenant']).toBe('acme');
    expect(req?.headers['svc-schedule-id']).toBe(scheduleId);
    expect(req?.headers.authorization).toBeUndefined();

    const schedule = await get(scheduleId);
    expect(schedule.lastScheduleTime).toBe(at('2026-01-01T00:05:00Z'));
    expect(schedule.nextScheduleTime).toBe(at('2026-01-01T00:10:00Z'));
    const [messageId] = Object.keys(schedule.lastScheduleStates as Json);
    expect(schedule.lastScheduleStates).toEqual({ [messageId as string]: 'DELIVERED' });
    expect(req?.headers['svc-message-id']).toBe(messageId);

    clock.set(at('2026-01-01T00:09:59Z'));
    expect(await fire()).toBe(0);
    clock.set(at('2026-01-01T00:10:00Z'));
    expect(await fire()).toBe(1);
    const events = await produced(scheduleId);
    expect(events).toHaveLength(2);
    expect(events.map((e) => e.labels)).toEqual([['nightly'], ['nightly']]);
    expect((await get(scheduleId)).lastScheduleStates).toEqual({
      [events[1]?.messageId as string]: 'CREATED',
    });
  });

  it('applies Svc-Delay from the tick, not from the time the tick is fired', async () => {
    const { json } = await create(`${dest.url}/later`, {
      'Svc-Cron': '0 * * * *',
      'Svc-Delay': '2m',
      'Svc-Queue-Name': 'reports',
    });
    const scheduleId = json.scheduleId as string;
    clock.set(at('2026-01-01T01:00:20Z')); // fired 20 s late
    expect(await fire()).toBe(1);
    const [messageId] = Object.keys((await get(scheduleId)).lastScheduleStates as Json);
    const res = await t.api(`/v2/messages/${messageId}`);
    const message = (await res.json()) as Json;
    expect(message).toMatchObject({
      scheduleId,
      queueName: 'reports',
      notBefore: at('2026-01-01T01:02:00Z'),
      createdAt: at('2026-01-01T01:00:20Z'),
    });
    expect(await t.ferry.engine.runOnce()).toBe(0);
    clock.set(at('2026-01-01T01:02:00Z'));
    expect(await t.ferry.engine.runOnce()).toBe(1);
  });

  it('after downtime, fires once for the most recent missed tick, then keeps its rhythm', async () => {
    const { json } = await create(`${dest.url}/missed`, { 'Svc-Cron': '*/5 * * * *' });
    const scheduleId = json.scheduleId as string;
    clock.set(at('2026-01-01T03:07:00Z')); // 37 ticks missed
    expect(await fire()).toBe(1);
    expect(await fire()).toBe(0);
    const schedule = await get(scheduleId);
    expect(schedule.lastScheduleTime).toBe(at('2026-01-01T03:05:00Z'));
    expect(schedule.nextScheduleTime).toBe(at('2026-01-01T03:10:00Z'));
    clock.set(at('2026-01-01T03:10:00Z'));
    expect(await fire()).toBe(1);
    expect(await produced(scheduleId)).toHaveLength(2);
  });

  it('a paused schedule skips its ticks; resume computes the next tick from now', async () => {
    const { json } = await create(`${dest.url}/paused`, { 'Svc-Cron': '*/5 * * * *' });
    const id = json.scheduleId as string;
    expect((await t.api(`/v2/schedules/${id}/pause`, { method: 'PATCH' })).status).toBe(200);
    expect((await get(id)).isPaused).toBe(true);
    clock.set(at('2026-01-01T00:05:00Z'));
    expect(await fire()).toBe(0);
    clock.set(at('2026-01-01T00:12:00Z'));
    expect(await fire()).toBe(0);
    expect((await t.api(`/v2/schedules/${id}/resume`, { method: 'POST' })).status).toBe(200);
    const resumed = await get(id);
    expect(resumed.isPaused).toBe(false);
    expect(resumed.nextScheduleTime).toBe(at('2026-01-01T00:15:00Z'));
    expect(await fire()).toBe(0); // the ticks missed while paused do not fire
    clock.set(at('2026-01-01T00:15:00Z'));
    expect(await fire()).toBe(1);
    // POST pause and PATCH resume work too; resuming a running schedule changes nothing.
    expect((await t.api(`/v2/schedules/${id}/pause`, { method: 'POST' })).status).toBe(200);
    expect((await t.api(`/v2/schedules/${id}/resume`, { method: 'PATCH' })).status).toBe(200);
    expect((await t.api(`/v2/schedules/${id}/resume`, { method: 'PATCH' })).status).toBe(200);
    expect((await get(id)).nextScheduleTime).toBe(at('2026-01-01T00:20:00Z'));
  });

  it('creating again with Svc-Schedule-Id replaces the schedule entirely', async () => {
    const first = await create(
      `${dest.url}/v1`,
      {
        'Svc-Cron': '*/5 * * * *',
        'Svc-Schedule-Id': 'nightly-report.v1_a',
        'Svc-Retries': '4',
        'Svc-Label': 'old',
      },
      'old body',
    );
    expect(first.json).toEqual({ scheduleId: 'nightly-report.v1_a' });
    clock.set(at('2026-01-01T00:05:00Z'));
    expect(await fire()).toBe(1);

    const second = await create(`${dest.url}/v2`, {
      'Svc-Cron': '0 * * * *',
      'Svc-Schedule-Id': 'nightly-report.v1_a',
    });
    expect(second.status).toBe(200);
    const list = (await (await t.api('/v2/schedules')).json()) as Json[];
    expect(list).toHaveLength(1);
    const schedule = list[0] as Json;
    expect(schedule).toMatchObject({
      scheduleId: 'nightly-report.v1_a',
      cron: '0 * * * *',
      destination: `${dest.url}/v2`,
      createdAt: at('2026-01-01T00:05:00Z'),
      retries: 5, // the plan's default again
      nextScheduleTime: at('2026-01-01T01:00:00Z'),
    });
    for (const field of ['body', 'label', 'labels', 'lastScheduleTime', 'lastScheduleStates']) {
      expect(schedule[field], field).toBeUndefined();
    }
    clock.set(at('2026-01-01T00:10:00Z'));
    expect(await fire()).toBe(0);
    clock.set(at('2026-01-01T01:00:00Z'));
    expect(await fire()).toBe(1);
    expect(await t.ferry.engine.runOnce()).toBe(2);
    await dest.waitFor(2);
    // The old schedule's tick was stored before the replace; the new one's goes to /v2.
    expect(dest.requests.map((r) => r.path).sort()).toEqual(['/v1', '/v2']);
  });

  it('lists every field of the contract, header names in canonical case', async () => {
    await create(
      `${dest.url}/all`,
      {
        'Svc-Cron': 'CRON_TZ=Europe/Berlin 0 3 * * *',
        'content-type': 'application/json',
        'svc-forward-test-header': 'test-value',
        'Svc-Retries': '2',
        'Svc-Delay': '90s',
        'Svc-Retry-Delay': '1000 * retried',
        'Svc-Timeout': '30s',
        'Svc-Flow-Control-Key': 'fc',
        'Svc-Flow-Control-Value': 'parallelism=2, rate=10, period=1m',
        'Svc-Label': 'a,b',
        'Svc-Queue-Name': 'q1',
      },
      '{"hello":"world"}',
    );
    const [schedule] = (await (await t.api('/v2/schedules')).json()) as Json[];
    expect(schedule).toEqual({
      scheduleId: expect.stringMatching(/^scd_/) as string,
      cron: 'CRON_TZ=Europe/Berlin 0 3 * * *',
      destination: `${dest.url}/all`,
      createdAt: START,
      method: 'POST',
      isPaused: false,
      header: { 'Content-Type': ['application/json'], 'Test-Header': ['test-value'] },
      body: '{"hello":"world"}',
      retries: 2,
      delay: 90,
      callerIp: '127.0.0.1',
      queueName: 'q1',
      flowControlKey: 'fc',
      parallelism: 2,
      rate: 10,
      period: 60,
      retryDelayExpression: '1000 * retried',
      timeout: 30,
      label: 'a',
      labels: ['a', 'b'],
      nextScheduleTime: at('2026-01-01T02:00:00Z'), // 03:00 in Berlin (CET)
    });
  });

  it('refuses bad input with a 4xx naming the problem, and unknown ids with 404', async () => {
    const cases: [Record<string, string>, number, RegExp][] = [
      [{}, 400, /missing Svc-Cron/],
      [{ 'Svc-Cron': '*/5 * * *' }, 400, /Svc-Cron.*five fields/],
      [{ 'Svc-Cron': '99 * * * *' }, 400, /Svc-Cron.*minute/],
      [{ 'Svc-Cron': 'CRON_TZ=Nowhere/City * * * * *' }, 400, /Svc-Cron.*time zone/],
      [{ 'Svc-Cron': '* * * * *', 'Svc-Schedule-Id': 'has space' }, 400, /Svc-Schedule-Id/],
      [{ 'Svc-Cron': '* * * * *', 'Svc-Schedule-Id': 'a/b' }, 400, /Svc-Schedule-Id/],
      [{ 'Svc-Cron': '* * * * *', 'Svc-Queue-Name': 'q!' }, 400, /Svc-Queue-Name/],
      [{ 'Svc-Cron': '* * * * *', 'Svc-Retries': 'many' }, 400, /Svc-Retries/],
      [{ 'Svc-Cron': '* * * * *', 'Svc-Retries': '99' }, 412, /max_retries/],
      [{ 'Svc-Cron': '* * * * *', 'Svc-Not-Before': '1900000000' }, 400, /Svc-Not-Before/],
      [{ 'Svc-Cron': '* * * * *', 'Svc-Callback': 'ftp://x/cb' }, 400, /invalid Svc-Callback/],
    ];
    for (const [headers, status, message] of cases) {
      const res = await create(`${dest.url}/x`, headers);
      expect(res.status, JSON.stringify(headers)).toBe(status);
      expect(res.json.error, JSON.stringify(headers)).toMatch(message);
    }
    const group = await create('my-group', { 'Svc-Cron': '* * * * *' });
    expect(group).toEqual({ status: 404, json: { error: 'URL group "my-group" not found' } });
    expect(await t.ferry.driver.executor.scheduleList({ accountId: t.account.id })).toEqual([]);

    for (const [method, path] of [
      ['GET', '/v2/schedules/nope'],
      ['DELETE', '/v2/schedules/nope'],
      ['PATCH', '/v2/schedules/nope/pause'],
      ['POST', '/v2/schedules/nope/resume'],
    ] as const) {
      const res = await t.api(path, { method });
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(((await res.json()) as Json).error).toBe('schedule "nope" not found');
    }
  });

  it('is scoped by account: another account’s schedule is a 404', async () => {
    const { json } = await create(`${dest.url}/mine`, {
      'Svc-Cron': '* * * * *',
      'Svc-Schedule-Id': 'shared-name',
    });
    const other = await createAccount({
      executor: t.ferry.driver.executor,
      plan: 'paid',
      now: clock.now(),
    });
    const asOther = (path: string, method = 'GET') =>
      fetch(`${t.url}${path}`, { method, headers: { authorization: `Bearer ${other.token}` } });
    expect((await asOther(`/v2/schedules/${json.scheduleId as string}`)).status).toBe(404);
    expect((await asOther(`/v2/schedules/shared-name`, 'DELETE')).status).toBe(404);
    expect(await (await asOther('/v2/schedules')).json()).toEqual([]);
    expect((await t.api('/v2/schedules/shared-name', { method: 'DELETE' })).status).toBe(200);
    expect(await (await t.api('/v2/schedules')).json()).toEqual([]);
  });

  it('a crash between claim and commit neither loses nor doubles the tick', async () => {
    const { json } = await create(`${dest.url}/crash`, { 'Svc-Cron': '*/5 * * * *' });
    const scheduleId = json.scheduleId as string;
    clock.set(at('2026-01-01T00:05:00Z'));
    // The real driver, whose transaction fails after the scheduler did all of its writes.
    const real = t.ferry.driver.executor;
    const crashing = new Proxy(real, {
      get(target, prop, receiver) {
        if (prop !== 'transaction') return Reflect.get(target, prop, receiver) as unknown;
        const transaction: Executor['transaction'] = (fn, options) =>
          target.transaction(async (tx) => {
            await fn(tx);
            throw new Error('process died before COMMIT');
          }, options);
        return transaction;
      },
    });
    const doomed = new Scheduler({
      executor: crashing,
      clock,
      accounts: t.ferry.accounts,
      logger: silentLogger,
      prefix: 'Svc',
      onFired: () => undefined,
    });
    await expect(doomed.runOnce()).rejects.toThrow('process died before COMMIT');
    expect(await produced(scheduleId)).toHaveLength(0);
    expect((await get(scheduleId)).lastScheduleTime).toBeUndefined();

    expect(await fire()).toBe(1);
    expect(await fire()).toBe(0);
    expect(await produced(scheduleId)).toHaveLength(1);
    expect((await get(scheduleId)).lastScheduleTime).toBe(at('2026-01-01T00:05:00Z'));
  });

  it('daylight saving in the schedule’s zone neither skips nor doubles a local tick', async () => {
    // Europe/Berlin 2026: clocks go 02:00 → 03:00 on 29 March and 03:00 → 02:00 on 25 October.
    clock.set(at('2026-03-27T12:00:00Z'));
    const daily = await create(`${dest.url}/daily`, {
      'Svc-Cron': 'CRON_TZ=Europe/Berlin 0 3 * * *',
    });
    const gap = await create(`${dest.url}/gap`, {
      'Svc-Cron': 'CRON_TZ=Europe/Berlin 30 2 * * *',
    });
    const fired = async (id: string) =>
      (await produced(id)).map((e) => new Date(e.time as number).toISOString());
    // Step through three days in 10-minute steps, firing at each step.
    const step = async (fromIso: string, toIso: string) => {
      for (let now = at(fromIso); now <= at(toIso); now += 10 * MINUTE) {
        clock.set(now);
        await fire();
      }
    };
    await step('2026-03-27T12:00:00Z', '2026-03-30T12:00:00Z');
    expect(await fired(daily.json.scheduleId as string)).toEqual([
      '2026-03-28T02:00:00.000Z', // 03:00 CET
      '2026-03-29T01:00:00.000Z', // 03:00 CEST, the day of the change
      '2026-03-30T01:00:00.000Z',
    ]);
    // 02:30 does not exist on 29 March: that day's tick comes at 03:00, once.
    expect(await fired(gap.json.scheduleId as string)).toEqual([
      '2026-03-28T01:30:00.000Z',
      '2026-03-29T01:00:00.000Z',
      '2026-03-30T00:30:00.000Z',
    ]);

    clock.set(at('2026-10-24T12:00:00Z'));
    const autumn = await create(`${dest.url}/autumn`, {
      'Svc-Cron': 'CRON_TZ=Europe/Berlin 30 2 * * *',
    });
    await step('2026-10-24T12:00:00Z', '2026-10-26T12:00:00Z');
    // 02:30 happens twice on 25 October (CEST, then CET): it fires once.
    expect(await fired(autumn.json.scheduleId as string)).toEqual([
      '2026-10-25T00:30:00.000Z',
      '2026-10-26T01:30:00.000Z',
    ]);
  });

  it('max_schedules: one more than the plan allows is a 412; replacing still works', async () => {
    const free = await createAccount({
      executor: t.ferry.driver.executor,
      plan: 'free',
      now: clock.now(),
    });
    const asFree = (id: string) =>
      fetch(`${t.url}/v2/schedules/${dest.url}/x`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${free.token}`,
          'Svc-Cron': '* * * * *',
          'Svc-Schedule-Id': id,
        },
      });
    for (let i = 0; i < 10; i++) expect((await asFree(`s${i}`)).status).toBe(200);
    const over = await asFree('s10');
    expect(over.status).toBe(412);
    expect(((await over.json()) as Json).error).toMatch(/max_schedules is 10/);
    expect((await asFree('s3')).status).toBe(200);
  });
});

describe('the scheduler service, through the SDK', () => {
  it('fires due schedules by itself and wakes when a schedule is created', async () => {
    const clock = new ManualClock(START);
    const t = await startFerry({ clock }); // every role: the loops run
    const dest = await startReceiver();
    try {
      const { scheduleId } = await t.client.schedules.create({
        destination: `${dest.url}/loop`,
        cron: '*/5 * * * *',
        body: 'from the loop',
      });
      expect((await t.client.schedules.get(scheduleId)).nextScheduleTime).toBe(
        at('2026-01-01T00:05:00Z'),
      );
      clock.set(at('2026-01-01T00:05:00Z'));
      // The loop sleeps (the clock is manual); a create wakes it, and it finds the first due.
      await t.client.schedules.create({ destination: `${dest.url}/yearly`, cron: '0 0 1 1 *' });
      const [req] = await dest.waitFor(1);
      expect(req?.path).toBe('/loop');
      expect(req?.body.toString()).toBe('from the loop');
      expect(req?.headers['svc-schedule-id']).toBe(scheduleId);
      const schedules = await t.client.schedules.list();
      expect(schedules.map((s) => s.scheduleId)[0]).toBe(scheduleId);
      expect(schedules[0]?.lastScheduleTime).toBe(at('2026-01-01T00:05:00Z'));

      await t.client.schedules.pause(scheduleId);
      expect((await t.client.schedules.get(scheduleId)).isPaused).toBe(true);
      await t.client.schedules.resume(scheduleId);
      await t.client.schedules.delete(scheduleId);
      await expect(t.client.schedules.get(scheduleId)).rejects.toMatchObject({ status: 404 });
      await t.ferry.scheduler.stop();
      await t.ferry.scheduler.stop(); // idempotent
    } finally {
      await t.close();
      await dest.close();
    }
  });
});
