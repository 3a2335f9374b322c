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
