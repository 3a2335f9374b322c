/**
 * The read endpoints the console added (Ferry extensions): `GET /v2/messages` (the account's
 * messages that are not final, newest first, filtered, cursor paged, bodies cut) and
 * `GET /v2/usage` / `GET /v2/usage/now` (a token's own metering), each isolated per account, on
 * every storage. Clock-controlled, engine driven by `runOnce()`.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/core/clock.js';
import type { UsageStats } from '../src/core/usage-stats.js';
import { STORAGES, startFerry, type TestFerry } from './helpers/ferry.js';
import { createMgmtUser, createQueueAccount, withToken } from './helpers/mgmt.js';
import { startReceiver, type Receiver } from './helpers/receiver.js';

const T0 = Date.UTC(2026, 2, 10, 12, 0, 30);

interface Listed {
  messageId: string;
  labels?: string[];
  body?: string;
  bodySize?: number;
  notBefore: number;
}

describe.each(STORAGES)('on %s', (storage) => {
  let t: TestFerry;
  let clock: ManualClock;
  let receiver: Receiver;

  beforeEach(async () => {
    clock = new ManualClock(T0);
    t = await startFerry({ clock, engine: false, storage });
    receiver = await startReceiver();
  });
  afterEach(async () => {
    await t.close();
    await receiver.close();
  });

  const mine = (path: string, init?: RequestInit): Promise<Response> => t.api(path, init);

  const publish = async (
    api: (path: string, init?: RequestInit) => Promise<Response>,
    headers: Record<string, string>,
    body = 'hello',
  ): Promise<string> => {
    const res = await api(`/v2/publish/${receiver.url}/x`, { method: 'POST', headers, body });
    expect(res.status).toBe(200);
    return ((await res.json()) as { messageId: string }).messageId;
  };

  const list = async (
    api: (path: string, init?: RequestInit) => Promise<Response>,
    query: string,
  ): Promise<{ cursor?: string; messages: Listed[] }> => {
    const res = await api(`/v2/messages?${query}`);
    expect(res.status).toBe(200);
    return (await res.json()) as { cursor?: string; messages: Listed[] };
  };

  it('GET /v2/messages lists waiting messages newest first, filtered and paged', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      clock.set(T0 + i * 1000);
      ids.push(
        await publish(mine, { 'Svc-Delay': '1h', 'Svc-Label': i % 2 === 0 ? 'even' : 'odd' }),
      );
    }
    const first = await list(mine, 'count=2');
    expect(first.messages.map((m) => m.messageId)).toEqual([ids[4], ids[3]]);
    expect(first.cursor).toBeDefined();
    const second = await list(mine, `count=2&cursor=${first.cursor ?? ''}`);
    expect(second.messages.map((m) => m.messageId)).toEqual([ids[2], ids[1]]);
    const third = await list(mine, `count=2&cursor=${second.cursor ?? ''}`);
    expect(third.messages.map((m) => m.messageId)).toEqual([ids[0]]);
    expect(third.cursor).toBeUndefined();

    const even = await list(mine, 'label=even');
    expect(even.messages.map((m) => m.messageId)).toEqual([ids[4], ids[2], ids[0]]);
    expect(even.messages[0]?.notBefore).toBe(T0 + 4000 + 3_600_000);

    // A delivered message is final: not listed. A cancelled one neither.
    clock.set(T0 + 10_000);
    const now = await publish(mine, {});
    expect((await list(mine, '')).messages.map((m) => m.messageId)).toContain(now);
    await t.ferry.engine.runOnce();
    await receiver.waitFor(1);
    expect((await list(mine, '')).messages.map((m) => m.messageId)).not.toContain(now);
    expect((await t.api(`/v2/messages/${ids[1] ?? ''}`, { method: 'DELETE' })).status).toBe(200);
    expect((await list(mine, 'label=odd')).messages.map((m) => m.messageId)).toEqual([ids[3]]);
  });

  it('GET /v2/messages cuts long bodies, refuses bad parameters and is per account', async () => {
    const id = await publish(mine, { 'Svc-Delay': '1h' }, 'x'.repeat(1000));
    const cut = await list(mine, 'bodyCut=10');
    expect(cut.messages[0]).toMatchObject({ messageId: id, body: 'x'.repeat(10), bodySize: 1000 });

    for (const bad of ['count=0', 'count=101', 'bogus=1', 'bodyCut=-1']) {
      const res = await t.api(`/v2/messages?${bad}`);
      expect(res.status, bad).toBe(400);
      expect(((await res.json()) as { error: string }).error).toBeTruthy();
    }

    const admin = await createMgmtUser(t, true);
    const other = await createQueueAccount(admin, { type: 'paid' });
    const otherApi = withToken(t.url, other.token);
    expect((await list(otherApi, '')).messages).toEqual([]);
    expect((await otherApi(`/v2/messages/${id}`)).status).toBe(404);
    const theirs = await publish(otherApi, { 'Svc-Delay': '1h' });
    expect((await list(mine, '')).messages.map((m) => m.messageId)).toEqual([id]);
    expect((await list(otherApi, '')).messages.map((m) => m.messageId)).toEqual([theirs]);
  });

  it('GET /v2/usage and /v2/usage/now read only the token’s account', async () => {
    const failing = await startReceiver(() => ({ status: 500 }));
    try {
      await publish(mine, {});
      await publish(mine, { 'Svc-Delay': '1h' });
      const res = await t.api(`/v2/publish/${failing.url}/f`, {
        method: 'POST',
        headers: { 'Svc-Retries': '0' },
        body: 'f',
      });
      expect(res.status).toBe(200);
      const run = await t.api(`/v2/publish/${failing.url}/wf`, {
        method: 'POST',
        headers: {
          'Svc-Retries': '0',
          'Svc-Workflow-RunId': 'wfr_usage-now',
          'Svc-Workflow-Init': 'true',
        },
        body: 'w',
      });
      expect(run.status).toBe(200);
      await t.ferry.engine.runOnce();
      await failing.waitFor(2);

      const stats = (await (await t.api('/v2/usage?period=1h')).json()) as UsageStats;
      const last = (points: { y: number }[]): number => points[points.length - 1]?.y ?? 0;
      expect(stats.daily_used).toHaveLength(60);
      expect(last(stats.daily_used)).toBe(4);
      const byId = Object.fromEntries(
        stats.daily_queue_messages.map((s) => [s.id, last(s.data_points)]),
      );
      expect(byId).toMatchObject({ delivered: 1, failed: 2 });
      expect(stats.dlq_message_count).toBe(1);

      const now = (await (await t.api('/v2/usage/now')).json()) as Record<string, number>;
      expect(now).toMatchObject({
        due: 0,
        delayed: 1,
        waiting: 0,
        inFlight: 0,
        dlq: 1,
        workflowDlq: 1,
      });

      const admin = await createMgmtUser(t, true);
      const other = await createQueueAccount(admin, { type: 'paid' });
      const otherApi = withToken(t.url, other.token);
      const theirs = (await (await otherApi('/v2/usage')).json()) as UsageStats;
      expect(theirs.daily_used.every((p) => p.y === 0)).toBe(true);
      expect(theirs.dlq_message_count).toBe(0);
      expect(await (await otherApi('/v2/usage/now')).json()).toMatchObject({
        due: 0,
        delayed: 0,
        dlq: 0,
        workflowDlq: 0,
      });

      expect((await t.api('/v2/usage?period=2h')).status).toBe(400);
      expect((await t.api('/v2/usage/now?x=1')).status).toBe(400);
      expect((await fetch(`${t.url}/v2/usage`)).status).toBe(401);
    } finally {
      await failing.close();
    }
  });
});
