/**
 * Isolation: two management users, each with a messaging account and a search index. Every read
 * and write endpoint is tried across the boundary: the other tenant's resources are 404 (or
 * simply absent from lists), missing credentials are 401, and nothing of the other side changes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/core/clock.js';
import { STORAGES, startFerry, type TestFerry } from './helpers/ferry.js';
import { createMgmtUser, createQueueAccount, withToken, type MgmtUser } from './helpers/mgmt.js';
import { startReceiver, type Receiver } from './helpers/receiver.js';

interface Tenant {
  user: MgmtUser;
  account: { id: string; token: string; [field: string]: unknown };
  api: (path: string, init?: RequestInit) => Promise<Response>;
  /** A pending (delayed) message. */
  messageId: string;
  dlqId: string;
  indexId: string;
}

describe.each(STORAGES)('on %s', (storage) => {
  let t: TestFerry;
  let failing: Receiver;
  let a: Tenant;
  let b: Tenant;

  async function tenant(): Promise<Tenant> {
    const user = await createMgmtUser(t);
    const account = await createQueueAccount(user, { type: 'paid' });
    const api = withToken(t.url, account.token);
    const publish = async (dest: string, headers: Record<string, string>) => {
      const res = await api(`/v2/publish/${dest}`, { method: 'POST', headers, body: 'x' });
      return ((await res.json()) as { messageId: string }).messageId;
    };
    const messageId = await publish('https://example.com/later', { 'Svc-Delay': '1h' });
    await publish(`${failing.url}/fail`, { 'Svc-Retries': '0' });
    expect(await t.ferry.engine.runOnce()).toBe(1);
    const dlq = (await (await api('/v2/dlq')).json()) as { messages: { dlqId: string }[] };
    // A URL group with a name both tenants use, a schedule and a queue with ids both tenants
    // use, and a flow-control key: each tenant's must stay its own.
    const json = { 'content-type': 'application/json' };
    await api('/v2/topics/shared-name/endpoints', {
      method: 'POST',
      headers: json,
      body: JSON.stringify({ endpoints: [{ url: `https://example.com/${account.id}` }] }),
    });
    await api('/v2/schedules/https://example.com/cron', {
      method: 'POST',
      headers: { 'Svc-Cron': '0 0 * * *', 'Svc-Schedule-Id': 'shared-schedule' },
      body: account.id,
    });
    await api('/v2/queues', {
      method: 'POST',
      headers: json,
      body: JSON.stringify({ queueName: 'shared-queue', parallelism: 1 }),
    });
    await publish('https://example.com/keyed', {
      'Svc-Delay': '1h',
      'Svc-Flow-Control-Key': `key-${account.id}`,
      'Svc-Flow-Control-Value': 'parallelism=1',
    });
    const index = await user.json('/v2/search', {
      method: 'POST',
      body: JSON.stringify({ name: 'idx', region: 'eu-west-1', type: 'free' }),
    });
    return {
      user,
      account,
      api,
      messageId,
      dlqId: dlq.messages[0]?.dlqId ?? '',
      indexId: index.id as string,
    };
  }

  beforeAll(async () => {
    t = await startFerry({ clock: new ManualClock(Date.now()), engine: false, storage });
    failing = await startReceiver(() => ({ status: 500 }));
    a = await tenant();
    b = await tenant();
  });
  afterAll(async () => {
    await t.close();
    await failing.close();
  });

  /** A's view of its own resources, to compare before and after B's attempts. */
  async function snapshotOfA() {
    const json = async (path: string) => (await a.api(path)).json();
    return {
      message: await json(`/v2/messages/${a.messageId}`),
      dlq: await json('/v2/dlq'),
      events: await json('/v2/events'),
      keys: await json('/v2/keys'),
      groups: await json('/v2/topics'),
      schedules: await json('/v2/schedules'),
      queues: await json('/v2/queues'),
      flowControl: await json('/v2/flowControl'),
      account: await a.user.json(`/v2/queue/${a.account.id}`),
      index: await a.user.json(`/v2/search/${a.indexId}`),
    };
  }

  it('messaging: another account’s messages, events, logs, DLQ and keys are out of reach', async () => {
    const before = await snapshotOfA();
    const status = async (path: string, method = 'GET') => (await b.api(path, { method })).status;

    expect(await status(`/v2/messages/${a.messageId}`)).toBe(404);
    expect(await status(`/v2/messages/${a.messageId}`, 'DELETE')).toBe(404);
    const bulk = await b.api(`/v2/messages?messageId=${a.messageId}`, { method: 'DELETE' });
    expect(await bulk.json()).toEqual({ cancelled: 0 });

    for (const log of ['events', 'logs'] as const) {
      const all = (await (await b.api(`/v2/${log}`)).json()) as Record<
        string,
        { messageId: string }[]
      >;
      const ids = new Set((all[log] ?? []).map((e) => e.messageId));
      expect(ids.has(a.messageId)).toBe(false);
      expect(ids.has(b.messageId)).toBe(true);
      const filtered = (await (
        await b.api(`/v2/${log}?messageId=${a.messageId}`)
      ).json()) as Record<string, unknown[]>;
      expect(filtered[log]).toEqual([]);
    }

    const dlq = (await (await b.api('/v2/dlq')).json()) as { messages: { dlqId: string }[] };
    expect(dlq.messages.map((m) => m.dlqId)).toEqual([b.dlqId]);
    expect(await status(`/v2/dlq/${a.dlqId}`)).toBe(404);
    expect(await status(`/v2/dlq/${a.dlqId}`, 'DELETE')).toBe(404);
    expect(await status(`/v2/dlq/retry/${a.dlqId}`, 'POST')).toBe(404);
    const bulkDelete = await b.api(`/v2/dlq?dlqIds=${a.dlqId}`, { method: 'DELETE' });
    expect(await bulkDelete.json()).toMatchObject({ deleted: 0 });
    const bulkRetry = await b.api(`/v2/dlq/retry?dlqIds=${a.dlqId}`, { method: 'POST' });
    expect(await bulkRetry.json()).toMatchObject({ responses: [] });
    const multiRetry = await b.api('/v2/dlq/retry/multi', {
      method: 'POST',
      body: JSON.stringify({ dlqIds: [a.dlqId] }),
    });
    expect(multiRetry.status).toBe(404);

    const keysOfB = (await (await b.api('/v2/keys')).json()) as { current: string };
    expect(keysOfB.current).not.toBe((before.keys as { current: string }).current);
    expect(await status('/v2/keys/rotate', 'POST')).toBe(200);

    // Another account's token is refused on A's id in the token (a forged UserID).
    const forged = Buffer.from(
      JSON.stringify({ UserID: a.account.id, Password: b.account.password }),
    ).toString('base64');
    expect((await withToken(t.url, forged)('/v2/keys')).status).toBe(401);

    expect(await snapshotOfA()).toEqual(before);
  });

  it('messaging: URL groups, schedules, queues and flow-control keys of the same names stay apart', async () => {
    const before = await snapshotOfA();
    const status = async (path: string, method = 'GET', body?: unknown) =>
      (
        await b.api(path, {
          method,
          headers: { 'content-type': 'application/json' },
          body: body === undefined ? undefined : JSON.stringify(body),
        })
      ).status;
    const key = `key-${a.account.id}`;
    const attempts: [string, string, number, unknown?][] = [
      ['/v2/topics/only-a', 'GET', 404],
      ['/v2/topics/only-a', 'PATCH', 404, { headers: {} }],
      ['/v2/topics/only-a', 'DELETE', 404],
      [
        '/v2/topics/only-a/endpoints',
        'DELETE',
        404,
        { endpoints: [{ url: 'https://example.com/x' }] },
      ],
      ['/v2/publish/only-a', 'POST', 404],
      ['/v2/schedules/only-a-schedule', 'GET', 404],
      ['/v2/schedules/only-a-schedule', 'DELETE', 404],
      ['/v2/schedules/only-a-schedule/pause', 'POST', 404],
      ['/v2/queues/only-a-queue', 'GET', 404],
      ['/v2/queues/only-a-queue/pause', 'POST', 404],
      [`/v2/flowControl/${key}`, 'GET', 404],
      [`/v2/flowControl/${key}/pause`, 'POST', 404],
      [`/v2/flowControl/${key}/resetRate`, 'POST', 404],
    ];
    // A's own resources under those names, created now so B's attempts have a target.
    await a.api('/v2/topics/only-a/endpoints', {
      method: 'POST',
      body: JSON.stringify({ endpoints: [{ url: 'https://example.com/x' }] }),
    });
    await a.api('/v2/schedules/https://example.com/a', {
      method: 'POST',
      headers: { 'Svc-Cron': '0 0 * * *', 'Svc-Schedule-Id': 'only-a-schedule' },
    });
    await a.api('/v2/queues', {
      method: 'POST',
      body: JSON.stringify({ queueName: 'only-a-queue' }),
    });
    const beforeAttempts = await snapshotOfA();
    for (const [path, method, expected, body] of attempts) {
      expect(await status(path, method, body), `${method} ${path}`).toBe(expected);
    }
    // Same names, different tenants: B sees and changes only its own.
    const groups = (await (await b.api('/v2/topics')).json()) as {
      name: string;
      endpoints: { url: string }[];
    }[];
    expect(groups.map((g) => g.name)).toEqual(['shared-name']);
    expect(groups[0]?.endpoints).toEqual([{ url: `https://example.com/${b.account.id}` }]);
    const schedule = (await (await b.api('/v2/schedules/shared-schedule')).json()) as {
      body: string;
    };
    expect(schedule.body).toBe(b.account.id);
    expect(await status('/v2/schedules/shared-schedule/pause', 'POST')).toBe(200);
    expect(await status('/v2/queues/shared-queue/pause', 'POST')).toBe(200);
    expect(await status('/v2/topics/shared-name', 'DELETE')).toBe(200);
    const flowKeys = (await (await b.api('/v2/flowControl')).json()) as {
      flowControlKey: string;
    }[];
    expect(flowKeys.map((k) => k.flowControlKey)).toEqual([`key-${b.account.id}`]);

    expect(await snapshotOfA()).toEqual(beforeAttempts);
    expect(beforeAttempts.groups).not.toEqual(before.groups); // A's own additions did show
  });

  it('management: another user’s accounts, statistics and indexes are 404', async () => {
    const before = await snapshotOfA();
    const as = (path: string, method = 'GET', body?: unknown) =>
      b.user.api(path, { method, body: body === undefined ? undefined : JSON.stringify(body) });
    const A = a.account.id;
    const I = a.indexId;
    const attempts: [string, string, unknown?][] = [
      [`/v2/queue/${A}`, 'GET'],
      [`/v2/queue/stats/${A}`, 'GET'],
      [`/v2/queue/stats/${A}?period=7d`, 'GET'],
      [`/v2/queue/set-plan/${A}`, 'POST', { plan_name: 'free' }],
      [`/v2/queue/update-budget/${A}`, 'PATCH', { budget: 5 }],
      [`/v2/queue/rotate-token/${A}`, 'POST'],
      [`/v2/queue/${A}`, 'DELETE'],
      [`/v2/search/${I}`, 'GET'],
      [`/v2/search/${I}/rename`, 'POST', { name: 'stolen' }],
      [`/v2/search/${I}/reset-password`, 'POST'],
      [`/v2/search/${I}`, 'DELETE'],
    ];
    for (const [path, method, body] of attempts) {
      const res = await as(path, method, body);
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(((await res.json()) as { error: string }).error).toMatch(/not found/);
      const anonymous = await fetch(`${t.url}${path}`, { method });
      expect(anonymous.status, `anonymous ${method} ${path}`).toBe(401);
    }
    const accounts = await b.user.json<{ id: string }[]>('/v2/queue');
    expect(accounts.map((x) => x.id)).toEqual([b.account.id]);
    const indexes = await b.user.json<{ id: string }[]>('/v2/search');
    expect(indexes.map((x) => x.id)).toEqual([b.indexId]);

    expect(await snapshotOfA()).toEqual(before);
    expect((await a.api('/v2/keys')).status).toBe(200);
  });
});
