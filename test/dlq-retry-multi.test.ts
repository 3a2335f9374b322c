/**
 * `POST /v2/dlq/retry/multi`, Upstash's "Multiple IDs" form of a DLQ retry: the ids in a JSON
 * body, each published again as a new message (with the override headers sent), answered in the
 * order given; one id that is not in the DLQ refuses the whole call.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/core/clock.js';
import { STORAGES, startFerry, type TestFerry } from './helpers/ferry.js';
import { startReceiver, type Receiver } from './helpers/receiver.js';

describe.each(STORAGES)('POST /v2/dlq/retry/multi (%s)', (storage) => {
  let t: TestFerry;
  let failing: Receiver;

  beforeAll(async () => {
    t = await startFerry({ storage, clock: new ManualClock(Date.now()), engine: false });
    failing = await startReceiver(() => ({ status: 500 }));
  });
  afterAll(async () => {
    await t.close();
    await failing.close();
  });

  const dlqIds = async (): Promise<Map<string, string>> => {
    const page = (await (await t.api('/v2/dlq')).json()) as {
      messages: { dlqId: string; body: string }[];
    };
    return new Map(page.messages.map((m) => [m.body, m.dlqId]));
  };
  const multi = (body: string, headers: Record<string, string> = {}) =>
    t.api('/v2/dlq/retry/multi', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...headers },
      body,
    });

  it('publishes the entries again in the order given, with the overrides; the rest stay', async () => {
    for (const body of ['a', 'b', 'c']) {
      const res = await t.api(`/v2/publish/${failing.url}/x`, {
        method: 'POST',
        headers: { 'Svc-Retries': '0' },
        body,
      });
      expect(res.status).toBe(200);
    }
    while ((await t.ferry.engine.runOnce()) > 0);
    const ids = await dlqIds();
    expect([...ids.keys()].sort()).toEqual(['a', 'b', 'c']);

    // One id not in the DLQ: 404 naming it, and nothing is published.
    const unknown = await multi(JSON.stringify({ dlqIds: [ids.get('a'), 'dlq_nope'] }));
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { error: string }).error).toBe(
      'DLQ entry "dlq_nope" not found',
    );
    expect((await dlqIds()).size).toBe(3);
    const tooMany = JSON.stringify({ dlqIds: Array.from({ length: 101 }, (_, i) => `dlq_${i}`) });
    for (const body of ['', '{}', '{"dlqIds":[]}', '{"dlqIds":[1]}', tooMany]) {
      const bad = await multi(body);
      expect(bad.status, body).toBe(400);
      expect(((await bad.json()) as { error: string }).error, body).toMatch(/body|dlqIds/);
    }

    const res = await multi(
      JSON.stringify({ dlqIds: [ids.get('b'), ids.get('a'), ids.get('b')] }),
      {
        'Svc-Retries': '2',
      },
    );
    expect(res.status).toBe(201);
    const { responses } = (await res.json()) as { responses: { messageId: string }[] };
    expect(responses).toHaveLength(2);
    const retried = await Promise.all(
      responses.map(async (r) => {
        const m = (await (await t.api(`/v2/messages/${r.messageId}`)).json()) as {
          body: string;
          maxRetries: number;
        };
        return [m.body, m.maxRetries];
      }),
    );
    expect(retried).toEqual([
      ['b', 2],
      ['a', 2],
    ]);
    expect([...(await dlqIds()).keys()]).toEqual(['c']);
  });
});
