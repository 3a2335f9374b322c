/**
 * Production mode refuses, at request time and with the publish's 400, every URL Ferry would
 * later deliver to that is loopback, private or otherwise not globally reachable: not only a
 * publish's destination and callbacks, but schedules' callbacks, the callback overrides of DLQ
 * retry and workflow resume/restart, `Svc-Workflow-Url`, URL-group endpoints and a group's
 * default callback headers (issue 21.5). Nothing is stored for a refused request.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/core/clock.js';
import { STORAGES, startFerry, type TestFerry } from './helpers/ferry.js';
import { PUBLIC, failedDlqEntry } from './helpers/ssrf.js';

/** Spellings of addresses that are not globally reachable, as a URL host. */
const PRIVATE_URLS = [
  'http://127.0.0.1/x',
  'http://localhost../x',
  'http://10.0.0.1/x',
  'http://[::ffff:8.8.8.8]/x',
  'http://[2002:a00:1::1]/x',
  'http://[64:ff9b:1::1]/x',
  'http://[fec0::1]/x',
  'http://198.18.0.1/x',
  'http://192.0.0.1/x',
];

describe.each(STORAGES)('production mode (%s)', (storage) => {
  let t: TestFerry;
  let clock: ManualClock;

  beforeEach(async () => {
    clock = new ManualClock(Date.now());
    t = await startFerry({ clock, engine: false, storage, args: ['--production'] });
  });
  afterEach(async () => {
    await t.close();
  });

  async function expectRefused(res: Response, field: string | RegExp): Promise<void> {
    const text = await res.text();
    expect(res.status, text).toBe(400);
    const { error } = JSON.parse(text) as { error: string };
    expect(error).toMatch(/private or loopback address \(refused in production mode\)/);
    expect(error).toMatch(field);
  }

  const dlqEntry = (): Promise<string> => failedDlqEntry(t);

  it('publish: every spelling of a private destination is refused (the reference answer)', async () => {
    for (const url of PRIVATE_URLS) {
      await expectRefused(await t.api(`/v2/publish/${url}`, { method: 'POST' }), /destination/);
    }
  });

  it.each(['Callback', 'Failure-Callback'])(
    "a schedule's Svc-%s: refused, no schedule stored",
    async (kind) => {
      for (const url of PRIVATE_URLS) {
        const res = await t.api(`/v2/schedules/${PUBLIC}`, {
          method: 'POST',
          headers: { 'Svc-Cron': '* * * * *', [`Svc-${kind}`]: url },
        });
        await expectRefused(res, `Svc-${kind}`);
      }
      expect(await (await t.api('/v2/schedules')).json()).toEqual([]);
      const ok = await t.api(`/v2/schedules/${PUBLIC}`, {
        method: 'POST',
        headers: { 'Svc-Cron': '* * * * *', [`Svc-${kind}`]: 'https://example.com/cb' },
      });
      expect(ok.status).toBe(200);
    },
  );

  it("a URL group's default Svc-Callback or Svc-Failure-Callback: refused by the PATCH", async () => {
    await t.api('/v2/topics/g/endpoints', {
      method: 'POST',
      body: JSON.stringify({ endpoints: [{ url: PUBLIC }] }),
    });
    const patch = await t.api('/v2/topics/g', {
      method: 'PATCH',
      body: JSON.stringify({ headers: { 'Svc-Callback': 'http://169.254.169.254/latest' } }),
    });
    await expectRefused(patch, 'Svc-Callback');
    const group = (await (await t.api('/v2/topics/g')).json()) as { headers?: unknown };
    expect(group.headers).toBeUndefined();
    const failure = await t.api('/v2/topics/g', {
      method: 'PATCH',
      body: JSON.stringify({ headers: { 'Svc-Failure-Callback': ['http://[::1]/f'] } }),
    });
    await expectRefused(failure, 'Svc-Failure-Callback');
  });

  it('POST /v2/topics/{name}/endpoints: a private endpoint is refused, the group not created', async () => {
    for (const url of PRIVATE_URLS) {
      const res = await t.api('/v2/topics/g/endpoints', {
        method: 'POST',
        body: JSON.stringify({ endpoints: [{ url: PUBLIC }, { url }] }),
      });
      await expectRefused(res, 'endpoints[1].url');
    }
    expect((await t.api('/v2/topics/g')).status).toBe(404);
  });

  it('DLQ retry: a private Svc-Callback or Svc-Failure-Callback override is refused, the entry stays', async () => {
    const dlqId = await dlqEntry();
    for (const kind of ['Callback', 'Failure-Callback']) {
      const one = await t.api(`/v2/dlq/retry/${dlqId}`, {
        method: 'POST',
        headers: { [`Svc-${kind}`]: 'http://127.0.0.1:9/cb' },
      });
      await expectRefused(one, `Svc-${kind}`);
      const bulk = await t.api(`/v2/dlq/retry?dlqIds=${dlqId}`, {
        method: 'POST',
        headers: { [`Svc-${kind}`]: 'http://[fd00::1]/cb' },
      });
      await expectRefused(bulk, `Svc-${kind}`);
      const multi = await t.api('/v2/dlq/retry/multi', {
        method: 'POST',
        headers: { [`Svc-${kind}`]: 'http://10.0.0.1/cb' },
        body: JSON.stringify({ dlqIds: [dlqId] }),
      });
      await expectRefused(multi, `Svc-${kind}`);
    }
    expect((await t.api(`/v2/dlq/${dlqId}`)).status).toBe(200);
    const retried = await t.api(`/v2/dlq/retry/${dlqId}`, {
      method: 'POST',
      headers: { 'Svc-Callback': 'https://example.com/cb' },
    });
    expect(retried.status).toBe(201);
  });

  it('Svc-Workflow-Url: a private one is refused, no run started', async () => {
    for (const url of PRIVATE_URLS) {
      const res = await t.api(`/v2/publish/${PUBLIC}`, {
        method: 'POST',
        headers: {
          'Svc-Workflow-RunId': 'wfr_ssrf',
          'Svc-Workflow-Init': 'true',
          'Svc-Workflow-Url': url,
        },
      });
      await expectRefused(res, 'Svc-Workflow-Url');
    }
    const logs = (await (await t.api('/v2/workflows/logs')).json()) as { runs: unknown[] };
    expect(logs.runs).toEqual([]);
  });

  it('workflow DLQ resume and restart: a private Svc-Failure-Callback override is refused', async () => {
    const trigger = await t.api(`/v2/publish/${PUBLIC}`, {
      method: 'POST',
      headers: {
        'Svc-Workflow-RunId': 'wfr_ssrf',
        'Svc-Workflow-Init': 'true',
        'Svc-Retries': '0',
      },
      body: 'payload',
    });
    expect(trigger.status).toBe(200);
    await t.ferry.engine.runOnce();
    const dlq = (await (await t.api('/v2/workflows/dlq')).json()) as {
      messages: { dlqId: string }[];
    };
    const dlqId = dlq.messages[0]?.dlqId;
    expect(dlqId).toBeDefined();
    for (const kind of ['resume', 'restart']) {
      const one = await t.api(`/v2/workflows/dlq/${kind}/${dlqId}`, {
        method: 'POST',
        headers: { 'Svc-Failure-Callback': 'http://localhost./failed' },
      });
      await expectRefused(one, 'Svc-Failure-Callback');
      const bulk = await t.api(`/v2/workflows/dlq/${kind}?dlqIds=${dlqId}`, {
        method: 'POST',
        headers: { 'Svc-Failure-Callback': 'http://[::ffff:7f00:1]/failed' },
      });
      await expectRefused(bulk, 'Svc-Failure-Callback');
    }
    const still = (await (await t.api('/v2/workflows/dlq')).json()) as { messages: unknown[] };
    expect(still.messages).toHaveLength(1);
  });

  it('POST /v2/wait: a private timeoutUrl is refused', async () => {
    await t.api(`/v2/publish/${PUBLIC}`, {
      method: 'POST',
      headers: { 'Svc-Workflow-RunId': 'wfr_wait', 'Svc-Workflow-Init': 'true' },
    });
    const res = await t.api('/v2/wait/ev', {
      method: 'POST',
      headers: { 'Svc-Workflow-RunId': 'wfr_wait' },
      body: JSON.stringify({
        url: PUBLIC,
        timeout: '1h',
        timeoutUrl: 'http://10.1.2.3/timeout',
        step: { stepId: 1, stepName: 'w', stepType: 'Wait', concurrent: 1 },
      }),
    });
    await expectRefused(res, 'timeoutUrl');
  });
});
