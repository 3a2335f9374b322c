/**
 * Two Ferry nodes on one PostgreSQL schema share the account limits: the per-second request
 * count is one counter for both, the daily quota sees the other node's messages once that
 * node's metering has flushed (docs/limits.md, "Across nodes"), max_queues holds when both
 * create queues at once, and max_global_parallelism holds for two delivering engines together
 * (docs/flow-control.md, "Global parallelism").
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Ferry } from '../src/app.js';
import { createAccount } from '../src/cli/credentials.js';
import { ManualClock, systemClock } from '../src/core/clock.js';
import type { PlanName } from '../src/core/types.js';
import { pgUrl, startFerry, startSecondNode, type TestFerry } from './helpers/ferry.js';
import { limitPlanArgs, planArgs } from './helpers/limits.js';
import { startReceiver, type Receiver } from './helpers/receiver.js';

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

describe.skipIf(!pgUrl)('max_global_parallelism and max_queues across two engines', () => {
  const LIMIT = 4;
  let a: TestFerry;
  let b: Ferry;
  let receiver: Receiver | undefined;

  beforeAll(async () => {
    const args = [
      ...planArgs({ paid: { max_global_parallelism: LIMIT, max_queues: 3 } }),
      '--concurrency',
      '20',
    ];
    a = await startFerry({ storage: 'postgres', args });
    b = await startSecondNode(a, systemClock, ['--roles', 'api,worker', ...args]);
  });
  afterAll(async () => {
    await b.stop();
    await a.close();
    await receiver?.close();
  });

  const onNode = (base: string, path: string, init: RequestInit = {}): Promise<Response> =>
    fetch(`${base}${path}`, {
      ...init,
      headers: { authorization: `Bearer ${a.token}`, ...(init.headers as Record<string, string>) },
    });

  it('never has more than the limit in flight at the destination, and delivers every message', async () => {
    let inFlight = 0;
    let maxInFlight = 0;
    const counts: number[] = [];
    receiver = await startReceiver(async (_req, index) => {
      inFlight += 1;
      maxInFlight = Math.max(maxInFlight, inFlight);
      // Held while the receiver asks a node for the account's count (this delivery is one of
      // them) and a little longer, so deliveries overlap as far as the engines let them.
      const node = index % 2 === 0 ? a.url : b.url;
      const global = (await (await onNode(node, '/v2/globalParallelism')).json()) as {
        parallelismCount: number;
      };
      counts.push(global.parallelismCount);
      await new Promise((resolve) => setTimeout(resolve, 20));
      inFlight -= 1;
      return { status: 200 };
    });
    const N = 60;
    const published = await Promise.all(
      Array.from({ length: N }, (_, i) =>
        onNode(i % 2 === 0 ? a.url : b.url, `/v2/publish/${receiver?.url}/m${i}`, {
          method: 'POST',
          body: `m${i}`,
        }),
      ),
    );
    expect(published.map((r) => r.status)).toEqual(Array(N).fill(200));
    const received = await receiver.waitFor(N, 30_000);
    expect(new Set(received.map((r) => r.path)).size).toBe(N);
    expect(maxInFlight).toBe(LIMIT);
    expect(Math.min(...counts)).toBeGreaterThanOrEqual(1);
    expect(Math.max(...counts)).toBeLessThanOrEqual(LIMIT);
  });

  it('creates the account’s last allowed queue once when both nodes create queues at once', async () => {
    const create = (base: string, queueName: string) =>
      onNode(base, '/v2/queues', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ queueName }),
      });
    expect((await create(a.url, 'q1')).status).toBe(200);
    expect((await create(b.url, 'q2')).status).toBe(200);
    const statuses = await Promise.all(
      Array.from({ length: 8 }, (_, i) => create(i % 2 ? a.url : b.url, `q-new-${i}`)),
    );
    expect(statuses.map((r) => r.status).sort()).toEqual([200, 412, 412, 412, 412, 412, 412, 412]);
    const queues = (await (await onNode(b.url, '/v2/queues')).json()) as unknown[];
    expect(queues).toHaveLength(3);
  });
});
