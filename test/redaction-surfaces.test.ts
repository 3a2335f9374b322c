/**
 * Svc-Redact-Fields on the read surfaces beyond messages, events and the DLQ (issue 21.4): URL
 * groups' default headers, callback and failure-callback messages (their forwarded headers),
 * workflow logs (steps' payload, output, call body and headers; the run's result), waiters
 * (`GET /v2/waiters`, the notify answer) and workflow steps' events and DLQ entries. The planted
 * secret still reaches where it is sent, and the SDK's own history fetch still returns it.
 */
import { createHash } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/core/clock.js';
import { STORAGES, startFerry, type TestFerry } from './helpers/ferry.js';
import { startReceiver, type Receiver } from './helpers/receiver.js';

const SECRET = 'sk_live_planted_secret_2104';
const sha = (v: string) => createHash('sha256').update(v).digest('hex');
const b64 = (v: string) => Buffer.from(v).toString('base64');

describe.each(STORAGES)('on %s', (storage) => {
  let t: TestFerry;
  let clock: ManualClock;
  let dest: Receiver;

  beforeEach(async () => {
    clock = new ManualClock(Date.now());
    t = await startFerry({ clock, engine: false, storage });
    dest = await startReceiver(() => ({ status: 500, body: 'no' }));
  });
  afterEach(async () => {
    await t.close();
    await dest.close();
  });

  const text = async (path: string, init?: RequestInit) => {
    const res = await t.api(path, init);
    const body = await res.text();
    expect(res.status, `${path}: ${body}`).toBeLessThan(300);
    return body;
  };

  /** The secret, plainly or in the encodings an answer could carry it. */
  function expectHidden(shown: string): void {
    expect(shown).not.toContain(SECRET);
    expect(shown).not.toContain(b64(SECRET).slice(0, 20));
  }

  it("a URL group's defaults: the values its own Svc-Redact-Fields covers are redacted, settings stay", async () => {
    await text('/v2/topics/g/endpoints', {
      method: 'POST',
      body: JSON.stringify({ endpoints: [{ url: `${dest.url}/a` }] }),
    });
    const patched = await text('/v2/topics/g', {
      method: 'PATCH',
      body: JSON.stringify({
        headers: {
          'Svc-Redact-Fields': 'header[Authorization], header[X-Cb-Key]',
          'Svc-Forward-Authorization': `Bearer ${SECRET}`,
          'Svc-Callback': `${dest.url}/cb`,
          'Svc-Callback-Forward-X-Cb-Key': SECRET,
          'X-Visible': 'shown',
          'Svc-Retries': '2',
        },
      }),
    });
    const list = await text('/v2/topics');
    const one = await text('/v2/topics/g');
    for (const shown of [patched, list, one]) expectHidden(shown);
    const group = JSON.parse(one) as { headers: Record<string, string[]> };
    expect(group.headers).toEqual({
      'Svc-Redact-Fields': ['header[Authorization], header[X-Cb-Key]'],
      'Svc-Forward-Authorization': [`REDACTED:${sha(`Bearer ${SECRET}`)}`],
      'Svc-Callback': [`${dest.url}/cb`],
      'Svc-Callback-Forward-X-Cb-Key': [`REDACTED:${sha(SECRET)}`],
      'X-Visible': ['shown'],
      'Svc-Retries': ['2'],
    });

    // The destination still gets the real value.
    expect((await t.api('/v2/publish/g', { method: 'POST', body: 'b' })).status).toBe(200);
    await t.ferry.engine.runOnce();
    const [got] = await dest.waitFor(1);
    expect(got?.headers.authorization).toBe(`Bearer ${SECRET}`);
  });

  it('callback and failure-callback messages: their forwarded headers in events, DLQ and messages', async () => {
    const callbacks = await startReceiver(() => ({ status: 500 }));
    try {
      const res = await t.api(`/v2/publish/${dest.url}/x`, {
        method: 'POST',
        headers: {
          'Svc-Redact-Fields': 'headers',
          'Svc-Retries': '0',
          'Svc-Callback': `${callbacks.url}/cb`,
          'Svc-Callback-Forward-X-Cb-Secret': SECRET,
          'Svc-Failure-Callback': `${callbacks.url}/failed`,
          'Svc-Failure-Callback-Forward-Authorization': `Basic ${SECRET}`,
        },
        body: 'body',
      });
      expect(res.status).toBe(200);
      for (let round = 0; round < 10; round++) {
        if ((await t.ferry.engine.runOnce()) === 0) break;
      }
      const got = await callbacks.waitFor(2);
      const byPath = Object.fromEntries(got.map((r) => [r.path, r.headers]));
      expect(byPath['/cb']?.['x-cb-secret']).toBe(SECRET);
      expect(byPath['/failed']?.authorization).toBe(`Basic ${SECRET}`);

      const dlq = JSON.parse(await text('/v2/dlq')) as {
        messages: { dlqId: string; url: string; header: Record<string, string[]> }[];
      };
      const cb = dlq.messages.find((m) => m.url.endsWith('/cb'));
      expect(cb?.header['X-Cb-Secret']).toEqual([`REDACTED:${sha(SECRET)}`]);
      const shown = [
        await text('/v2/events'),
        await text('/v2/logs'),
        JSON.stringify(dlq),
        ...(await Promise.all(dlq.messages.map((m) => text(`/v2/dlq/${m.dlqId}`)))),
      ].join('\n');
      expect(dlq.messages).toHaveLength(3); // the source and both callbacks failed
      expectHidden(shown);
      expect(shown).toContain(`REDACTED:${sha(`Basic ${SECRET}`)}`);
    } finally {
      await callbacks.close();
    }
  });

  it("workflow runs: logs, waiters, notify answer, steps' events and DLQ; the SDK's history keeps the values", async () => {
    const runId = 'wfr_redacted';
    const wf = { 'Svc-Workflow-RunId': runId };
    const trigger = await t.api(`/v2/publish/${dest.url}/wf`, {
      method: 'POST',
      headers: {
        ...wf,
        'Svc-Workflow-Init': 'true',
        'Svc-Redact-Fields': 'body, headers',
        'Svc-Forward-Authorization': `Basic ${SECRET}`,
        'Svc-Retries': '0',
      },
      body: JSON.stringify({ card: SECRET }),
    });
    expect(trigger.status).toBe(200);
    // A step with an output and a context.call step, as the SDK publishes them.
    const steps = [
      {
        stepId: 1,
        stepName: 'charge',
        stepType: 'Run',
        out: JSON.stringify(SECRET),
        concurrent: 1,
      },
      {
        stepId: 2,
        stepName: 'call',
        stepType: 'Call',
        concurrent: 1,
        callUrl: 'https://api.example.com/pay',
        callMethod: 'POST',
        callBody: { token: SECRET },
        callHeaders: { Authorization: [`Bearer ${SECRET}`] },
        out: { status: 200, body: SECRET },
      },
    ];
    for (const step of steps) {
      const res = await t.api(`/v2/publish/${dest.url}/wf`, {
        method: 'POST',
        headers: { ...wf, 'Content-Type': 'application/json' },
        body: JSON.stringify(step),
      });
      expect(res.status).toBe(200);
    }
    const wait = await t.api('/v2/wait/paid', {
      method: 'POST',
      headers: wf,
      body: JSON.stringify({
        url: `${dest.url}/wf`,
        timeout: '1h',
        timeoutUrl: `${dest.url}/wf`,
        timeoutHeaders: { Authorization: [`Basic ${SECRET}`] },
        step: { stepId: 3, stepName: 'wait', stepType: 'Wait', concurrent: 1 },
      }),
    });
    expect(wait.status).toBe(200);

    const waiters = await text('/v2/waiters/paid');
    const [waiter] = JSON.parse(waiters) as { headers: Record<string, string[]> }[];
    expect(waiter?.headers.Authorization).toEqual([`REDACTED:${sha(`Basic ${SECRET}`)}`]);
    const notified = await text('/v2/notify/paid', { method: 'POST', body: SECRET });
    expect(JSON.parse(notified)).toHaveLength(1);

    // The SDK's own history fetch is the documented exception: the run needs the real values.
    const history = await text(`/v2/workflows/runs/${runId}`);
    expect(history).toContain(b64(JSON.stringify({ card: SECRET })));

    await text(`/v2/workflows/runs/${runId}?cancel=false`, {
      method: 'DELETE',
      body: JSON.stringify({ result: SECRET }),
    });
    const logs = await text('/v2/workflows/logs');
    const run = (JSON.parse(logs) as { runs: Record<string, unknown>[] }).runs[0];
    expect(run?.workflowRunResponse).toBe(`REDACTED:${sha(JSON.stringify({ result: SECRET }))}`);
    const flat = (run?.steps as { steps: Record<string, unknown>[] }[]).flatMap((g) => g.steps);
    expect(flat[0]?.out).toBe(`REDACTED:${sha(JSON.stringify({ card: SECRET }))}`);
    expect(flat[1]?.out).toBe(`REDACTED:${sha(JSON.stringify(SECRET))}`);
    expect(flat[2]?.callHeaders).toEqual({
      Authorization: [`REDACTED:${sha(`Bearer ${SECRET}`)}`],
    });
    expect(flat[2]?.callUrl).toBe('https://api.example.com/pay');

    const shown = [
      waiters,
      notified,
      logs,
      await text('/v2/events'),
      await text(`/v2/workflows/logs?workflowRunId=${runId}`),
    ].join('\n');
    expectHidden(shown);
  });

  it("a workflow step that fails for good: its workflow DLQ entry is redacted like the trigger's", async () => {
    const runId = 'wfr_dlq';
    // The trigger is delivered; the step after it (which the SDK publishes without any
    // redaction header) fails for good and puts the run in the workflow DLQ.
    dest.respond((req) => ({ status: req.path === '/ok' ? 200 : 500 }));
    await text(`/v2/publish/${dest.url}/ok`, {
      method: 'POST',
      headers: {
        'Svc-Workflow-RunId': runId,
        'Svc-Workflow-Init': 'true',
        'Svc-Redact-Fields': 'body, headers',
        'Svc-Forward-Authorization': `Basic ${SECRET}`,
        'Svc-Retries': '0',
      },
      body: 'trigger',
    });
    await t.ferry.engine.runOnce();
    const step = { stepId: 1, stepName: 's', stepType: 'Run', out: SECRET, concurrent: 1 };
    const published = await text(`/v2/publish/${dest.url}/wf`, {
      method: 'POST',
      headers: { 'Svc-Workflow-RunId': runId },
      body: JSON.stringify(step),
    });
    const { messageId } = JSON.parse(published) as { messageId: string };
    await t.ferry.engine.runOnce();
    const dlq = await text('/v2/workflows/dlq');
    const entries = (JSON.parse(dlq) as { messages: { dlqId: string; messageId: string }[] })
      .messages;
    expect(entries.map((e) => e.messageId)).toEqual([messageId]);
    const shown = [
      dlq,
      await text(`/v2/workflows/dlq/${entries[0]?.dlqId}`),
      await text('/v2/dlq?source=workflow'),
      await text('/v2/events'),
    ].join('\n');
    expectHidden(shown);
  });
});
