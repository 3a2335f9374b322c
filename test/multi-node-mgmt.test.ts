/**
 * Two Ferry nodes on one PostgreSQL schema: a token reset or an account deletion through one node
 * is refused by the other node's very next request, and both nodes' metering adds up.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Ferry } from '../src/app.js';
import { ManualClock } from '../src/core/clock.js';
import type { UsageStats } from '../src/core/usage-stats.js';
import { pgUrl, startFerry, startSecondNode, type TestFerry } from './helpers/ferry.js';
import { createMgmtUser, createQueueAccount, withToken, type MgmtUser } from './helpers/mgmt.js';

describe.skipIf(!pgUrl)('two nodes sharing PostgreSQL', () => {
  const clock = new ManualClock(Date.UTC(2026, 5, 1, 9, 0, 0));
  let a: TestFerry;
  let b: Ferry;
  let admin: MgmtUser;

  beforeAll(async () => {
    a = await startFerry({ clock, engine: false, storage: 'postgres' });
    b = await startSecondNode(a, clock);
    admin = await createMgmtUser(a);
  });
  afterAll(async () => {
    await b.stop();
    await a.close();
  });

  it('a token reset on one node is refused by the other node’s next request', async () => {
    const account = await createQueueAccount(admin);
    const onB = withToken(b.url, account.token);
    expect((await onB('/v2/keys')).status).toBe(200); // node B has seen (and may cache) it
    const rotated = await admin.json<{ token: string }>(`/v2/queue/rotate-token/${account.id}`, {
      method: 'POST',
    });
    expect((await onB('/v2/keys')).status).toBe(401);
    expect((await withToken(b.url, rotated.token)('/v2/keys')).status).toBe(200);

    await admin.json(`/v2/queue/${account.id}`, { method: 'DELETE' });
    expect((await withToken(b.url, rotated.token)('/v2/keys')).status).toBe(401);
  });

  it('both nodes’ counts of the same minute add up', async () => {
    const account = await createQueueAccount(admin, { type: 'paid' });
    for (const node of [a.url, b.url, b.url]) {
      const res = await withToken(node, account.token)('/v2/publish/https://example.com/x', {
        method: 'POST',
        body: 'x',
      });
      expect(res.status).toBe(200);
    }
    await b.meter.runOnce(); // node A flushes its own when serving the stats
    const stats = await admin.json<UsageStats>(`/v2/queue/stats/${account.id}`);
    expect(stats.daily_used[59]).toEqual({ x: '2026-06-01 09:00:00 +0000 UTC', y: 3 });
  });
});
