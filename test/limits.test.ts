/**
 * Account limits at the API, against real storage and receivers, with a manual clock:
 * max_requests_per_second (429 + Burst-RateLimit-*), the daily quotas (soft headers, hard 429 +
 * RateLimit-*, reset at the UTC day boundary, fan-out and callbacks counted), max_dlq_size
 * (oldest entries evicted, a DLQ_EVICTED event), and the publish-time limits naming their value.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount } from '../src/cli/credentials.js';
import { ManualClock } from '../src/core/clock.js';
import type { PlanName } from '../src/core/types.js';
import { STORAGES, startFerry, type TestFerry } from './helpers/ferry.js';
import { limitPlanArgs } from './helpers/limits.js';
import { startReceiver, type Receiver } from './helpers/receiver.js';

/** 2026-06-01 09:00:00.250 UTC: a quarter into a second, 15 h before the next UTC midnight. */
const T0 = Date.UTC(2026, 5, 1, 9, 0, 0, 250);
const NEXT_MIDNIGHT_S = Date.UTC(2026, 5, 2) / 1000;

type Api = (path: string, init?: RequestInit) => Promise<Response>;

const limitHeaders = (res: Response, prefix: string) =>
  Object.fromEntries(
    ['Limit', 'Remaining', 'Reset'].map((k) => [k, res.headers.get(`${prefix}RateLimit-${k}`)]),
  );

describe.each(STORAGES)('account limits on %s', (storage) => {
  let t: TestFerry;
  let clock: ManualClock;
  let dest: Receiver;

  beforeAll(async () => {
    clock = new ManualClock(T0);
    t = await startFerry({ clock, engine: false, storage, args: limitPlanArgs() });
    dest = await startReceiver((req) => ({ status: req.path.startsWith('/fail') ? 500 : 200 }));
  });
  afterAll(async () => {
    await t.close();
    await dest.close();
  });

  /** A fresh account of `plan` and a fetch with its token. */
  async function account(plan: PlanName): Promise<Api> {
    const { token } = await createAccount({ executor: t.ferry.driver.executor, plan, now: T0 });
    return (path, init = {}) =>
      fetch(`${t.url}${path}`, {
        ...init,
        headers: { authorization: `Bearer ${token}`, ...(init.headers as Record<string, string>) },
      });
  }
  const publish = (api: Api, path = '/ok', headers: Record<string, string> = {}) =>
    api(`/v2/publish/${dest.url}${path}`, { method: 'POST', body: 'x', headers });

  it('max_requests_per_second: every request counts; the next one gets 429 until the next second', async () => {
    clock.set(T0);
    const api = await account('paid');
    expect((await api('/v2/keys')).status).toBe(200);
    expect((await publish(api)).status).toBe(200);
    expect((await api('/v2/dlq')).status).toBe(200);
    const refused = await publish(api);
    expect(refused.status).toBe(429);
    expect(await refused.json()).toEqual({
      error:
        'rate limit exceeded: max_requests_per_second is 3 requests per second for this account',
    });
    expect(limitHeaders(refused, 'Burst-')).toEqual({
      Limit: '3',
      Remaining: '0',
      Reset: String(Math.floor(T0 / 1000) + 1),
    });
    expect(refused.headers.get('RateLimit-Limit')).toBeNull();
    // Unauthenticated requests are not the account's: still 401, and they do not count.
    expect((await fetch(`${t.url}/v2/keys`)).status).toBe(401);
    clock.advance(749); // the last ms of the same second
    expect((await api('/v2/keys')).status).toBe(429);
    clock.advance(1); // the next second
    for (let i = 0; i < 3; i++) expect((await api('/v2/keys')).status).toBe(200);
    expect((await api('/v2/keys')).status).toBe(429);
  });

  it('daily quota: soft headers, then 429 at the hard limit; fan-out and callbacks count; it resets at midnight UTC', async () => {
    clock.set(T0);
    const api = await account('free');
    const soft = (res: Response) => {
      expect(res.status).toBe(200);
      return limitHeaders(res, '').Remaining;
    };
    // Soft quota 4: each created message takes one; the headers tell what is left.
    expect(limitHeaders(await publish(api), '')).toEqual({
      Limit: '4',
      Remaining: '3',
      Reset: String(NEXT_MIDNIGHT_S),
    });
    // A delivered message with a callback creates a callback message: it counts too.
    const withCallback = await publish(api, '/ok', { 'Svc-Callback': `${dest.url}/callback` });
    expect(limitHeaders(withCallback, '').Remaining).toBe('2');
    await t.ferry.engine.runOnce(); // delivers both; the callback message is created
    await dest.waitFor(2);
    // A batch of one: 1 + 1 + callback 1 + 1 = 4, the soft quota is used up.
    const batch = await api('/v2/batch', {
      method: 'POST',
      body: JSON.stringify([{ destination: `${dest.url}/ok` }]),
    });
    expect(limitHeaders(batch, '').Remaining).toBe('0');
    // Beyond the soft quota: still accepted, Remaining stays 0.
    expect(soft(await publish(api))).toBe('0');
    // 5 used; a URL group of two endpoints would make 7 > 6: refused as a whole.
    const group = await api('/v2/topics/pair/endpoints', {
      method: 'POST',
      body: JSON.stringify({ endpoints: [{ url: `${dest.url}/a` }, { url: `${dest.url}/b` }] }),
    });
    expect(group.status).toBe(200);
    const refused = await api('/v2/publish/pair', { method: 'POST' });
    expect(refused.status).toBe(429);
    expect(limitHeaders(refused, '')).toEqual({
      Limit: '6',
      Remaining: '1',
      Reset: String(NEXT_MIDNIGHT_S),
    });
    expect(((await refused.json()) as { error: string }).error).toBe(
      'daily quota exceeded: max_requests_per_day_hard is 6 messages per UTC day, ' +
        '5 created today, this request would create 2',
    );
    // One message still fits; then even one is refused.
    expect(soft(await publish(api))).toBe('0');
    const full = await publish(api);
    expect(full.status).toBe(429);
    expect(limitHeaders(full, '').Remaining).toBe('0');
    // Reading is not limited by the quota.
    expect((await api('/v2/events')).status).toBe(200);

    clock.set(Date.UTC(2026, 5, 1, 23, 59, 59, 999));
    expect((await publish(api)).status).toBe(429);
    clock.advance(1); // 2026-06-02 00:00:00.000 UTC
    const next = await publish(api);
    expect(limitHeaders(next, '')).toEqual({
      Limit: '4',
      Remaining: '3',
      Reset: String(NEXT_MIDNIGHT_S + 86_400),
    });
  });

  it('max_dlq_size: the oldest entries are evicted, each with a DLQ_EVICTED event', async () => {
    clock.set(T0);
    const api = await account('free'); // max_dlq_size 2 (and daily quota 6: 3 messages here)
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await publish(api, `/fail/${i}`, { 'Svc-Retries': '0' });
      ids.push(((await res.json()) as { messageId: string }).messageId);
      await t.ferry.engine.runOnce();
      clock.advance(1_000);
    }
    const dlq = (await (await api('/v2/dlq')).json()) as { messages: { messageId: string }[] };
    expect(dlq.messages.map((m) => m.messageId)).toEqual([ids[2], ids[1]]);
    const evicted = (await (await api('/v2/events?state=DLQ_EVICTED')).json()) as {
      events: { messageId: string; state: string; error: string; url: string }[];
    };
    expect(evicted.events).toHaveLength(1);
    expect(evicted.events[0]).toMatchObject({
      messageId: ids[0],
      state: 'DLQ_EVICTED',
      url: `${dest.url}/fail/0`,
    });
    expect(evicted.events[0]?.error).toMatch(
      /^DLQ entry dlq_\S+ evicted: the account's max_dlq_size \(2\) was reached$/,
    );
    const history = (await (await api(`/v2/events?messageId=${ids[0]}`)).json()) as {
      events: { state: string }[];
    };
    expect(history.events.map((e) => e.state)).toEqual([
      'DLQ_EVICTED',
      'FAILED',
      'ERROR',
      'ACTIVE',
      'CREATED',
    ]);

    // Retrying a DLQ entry creates a message, so the daily quota applies: 3 used, soft 4, hard 6.
    const retry = (id: string | undefined) => api(`/v2/dlq/retry/${id}`, { method: 'POST' });
    const [newest, older] = (
      (await (await api('/v2/dlq')).json()) as { messages: { dlqId: string }[] }
    ).messages.map((m) => m.dlqId);
    const retried = await retry(newest);
    expect(retried.status).toBe(201);
    expect(limitHeaders(retried, '').Remaining).toBe('0');
    for (let i = 0; i < 2; i++) expect((await publish(api, '/ok')).status).toBe(200);
    const refused = await retry(older);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('RateLimit-Limit')).toBe('6');
    const left = (await (await api('/v2/dlq')).json()) as { messages: { dlqId: string }[] };
    expect(left.messages.map((m) => m.dlqId)).toEqual([older]);
  });

  it.each([
    [
      'max_retries',
      { 'Svc-Retries': '4' },
      'Svc-Retries "4" is more than the plan\'s max_retries (3)',
    ],
    [
      'max_delay',
      { 'Svc-Delay': '8d' },
      'Svc-Delay "8d" is more than the plan\'s max_delay (604800 s)',
    ],
    [
      'max_parallelism',
      { 'Svc-Flow-Control-Key': 'k', 'Svc-Flow-Control-Value': 'parallelism=11' },
      "parallelism 11 is more than the plan's max_parallelism (10)",
    ],
  ])('publish beyond %s: 412 naming the limit and its value', async (_name, headers, message) => {
    clock.set(T0);
    const api = await account('free');
    const res = await publish(api, '/ok', headers);
    expect(res.status).toBe(412);
    expect(((await res.json()) as { error: string }).error).toContain(message);
  });
});
