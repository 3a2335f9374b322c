/**
 * A URL group that points back at Ferry's own publish URL, with the token in its default
 * headers, republishes every message it is delivered: the loop stops after MAX_HOPS passes
 * (core/hops.ts) instead of running until the rate limit. Real Ferry, real HTTP to itself and
 * to a receiver; the engine driven by `runOnce()` on a manual clock.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/core/clock.js';
import { MAX_HOPS } from '../src/core/hops.js';
import { STORAGES, startFerry, type TestFerry } from './helpers/ferry.js';
import { startReceiver, type Receiver } from './helpers/receiver.js';

describe.each(STORAGES)('on %s', (storage) => {
  let t: TestFerry;
  let receiver: Receiver;

  beforeEach(async () => {
    t = await startFerry({ clock: new ManualClock(Date.now()), engine: false, storage });
    receiver = await startReceiver();
  });
  afterEach(async () => {
    await t.close();
    await receiver.close();
  });

  /** Runs the engine until nothing is due now. */
  async function drain(): Promise<void> {
    while ((await t.ferry.engine.runOnce()) > 0);
  }

  it('a group that republishes to itself stops after MAX_HOPS passes, the last one in the DLQ', async () => {
    const self = `${t.url}/v2/publish/loop`;
    expect(
      (await t.api('/v2/topics/loop/endpoints', post({ endpoints: [{ url: self }] }))).status,
    ).toBe(200);
    const defaults = { 'Svc-Forward-Authorization': `Bearer ${t.token}`, 'Svc-Retries': '0' };
    const patched = await t.api('/v2/topics/loop', {
      method: 'PATCH',
      ...json({ headers: defaults }),
    });
    expect(patched.status).toBe(200);

    expect((await t.api('/v2/publish/loop', { method: 'POST', body: 'around' })).status).toBe(200);
    await drain();

    // The first message and MAX_HOPS republished ones; the last one's delivery was refused.
    const logs = (await (await t.api('/v2/logs?topicName=loop&count=1000')).json()) as {
      logs: { state: string; messageId: string }[];
    };
    const created = logs.logs.filter((e) => e.state === 'CREATED');
    expect(created).toHaveLength(MAX_HOPS + 1);
    expect(logs.logs.filter((e) => e.state === 'DELIVERED')).toHaveLength(MAX_HOPS);
    const dlq = (await (await t.api('/v2/dlq?topicName=loop')).json()) as {
      messages: { responseStatus: number; responseBody: string }[];
    };
    expect(dlq.messages).toHaveLength(1);
    expect(dlq.messages[0]?.responseStatus).toBe(400);
    expect(JSON.parse(dlq.messages[0]?.responseBody ?? '{}')).toEqual({
      error: expect.stringMatching(/^publish loop: .*\(Svc-Hops: 8; at most 8\)/),
    });
  });

  it('a delivery says how many times its message was republished; a first publish does not', async () => {
    const to = `${receiver.url}/hook`;
    await t.api(`/v2/publish/${to}`, { method: 'POST', body: 'first' });
    // What a publish made by one of Ferry's deliveries sends (it carries the delivery's id).
    const again = { 'Svc-Message-Id': 'msg_delivered', 'Svc-Hops': '2' };
    await t.api(`/v2/publish/${to}`, { method: 'POST', body: 'third pass', headers: again });
    const batch = [{ destination: to, body: 'batched' }];
    await t.api('/v2/batch', { method: 'POST', body: JSON.stringify(batch), headers: again });
    await drain();
    await receiver.waitFor(3);
    const hops = Object.fromEntries(
      receiver.requests.map((r) => [r.body.toString(), r.headers['svc-hops']]),
    );
    expect(hops).toEqual({ first: undefined, 'third pass': '3', batched: '3' });
  });
});

const json = (body: unknown): RequestInit => ({
  body: JSON.stringify(body),
  headers: { 'content-type': 'application/json' },
});
const post = (body: unknown): RequestInit => ({ method: 'POST', ...json(body) });
