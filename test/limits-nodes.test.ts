/**
 * Two Ferry nodes on one PostgreSQL schema share the account limits: the per-second request
 * count is one counter for both, and the daily quota sees the other node's messages once that
 * node's metering has flushed (docs/limits.md, "Across nodes").
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Ferry } from '../src/app.js';
import { createAccount } from '../src/cli/credentials.js';
import { ManualClock } from '../src/core/clock.js';
import type { PlanName } from '../src/core/types.js';
import { pgUrl, startFerry, startSecondNode, type TestFerry } from './helpers/ferry.js';
import { limitPlanArgs } from './helpers/limits.js';

const T0 = Date.UTC(2026, 5, 1, 9, 0, 0, 250);

describe.skipIf(!pgUrl)('account limits across two nodes sharing PostgreSQL', () => {
  const clock = new ManualClock(T0);
  let a: TestFerry;
  let b: Ferry;

  beforeAll(async () => {
    const plans = limitPlanArgs();
    a = await startFerry({ clock, engine: false, storage: 'postgres', args: plans });
    b = await startSecondNode(a, clock, plans);
  });
  afterAll(async () => {
    await b.stop();
    await a.close();
  });

  /** A fetch per node with a fresh account's token. */
  async function onNodes(plan: PlanName) {
    const { token } = await createAccount({ executor: b.driver.executor, plan, now: T0 });
    const at =
      (base: string) =>
      (path: string, init: RequestInit = {}): Promise<Response> =>
        fetch(`${base}${path}`, { ...init, headers: { authorization: `Bearer ${token}` } });
    return { onA: at(a.url), onB: at(b.url) };
  }

  it('max_requests_per_second is one count for both nodes', async () => {
    clock.set(T0);
    const { onA, onB } = await onNodes('paid'); // 3 per second
    expect((await onA('/v2/keys')).status).toBe(200);
    expect((await onB('/v2/keys')).status).toBe(200);
    expect((await onA('/v2/keys')).status).toBe(200);
    const refused = await onB('/v2/keys');
    expect(refused.status).toBe(429);
    expect(refused.headers.get('Burst-RateLimit-Remaining')).toBe('0');
    expect((await onA('/v2/keys')).status).toBe(429);
    clock.advance(1_000);
    const statuses = await Promise.all(
      [onA, onB, onA, onB, onA, onB].map(async (node) => (await node('/v2/keys')).status),
    );
    expect(statuses.filter((s) => s === 200)).toHaveLength(3);
    expect(statuses.filter((s) => s === 429)).toHaveLength(3);
  });

  it('the daily hard quota counts both nodes’ messages once they are flushed', async () => {
    clock.set(T0);
    const { onA, onB } = await onNodes('free'); // soft 4, hard 6 per UTC day
    const publish = (node: typeof onA) =>
      node('/v2/publish/https://example.com/x', { method: 'POST', body: 'x' });
    for (let i = 0; i < 4; i++) expect((await publish(onA)).status).toBe(200);
    await a.ferry.meter.runOnce(); // node A's counts reach the shared counters
    clock.advance(1_000); // past node B's cached read (1 s)
    const fifth = await publish(onB);
    expect(fifth.status).toBe(200);
    expect(fifth.headers.get('RateLimit-Remaining')).toBe('0'); // 5 > soft 4
    expect((await publish(onB)).status).toBe(200); // 6
    const refused = await publish(onB);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('RateLimit-Limit')).toBe('6');
    await b.meter.runOnce();
    clock.advance(1_000);
    expect((await publish(onA)).status).toBe(429);
  });
});
