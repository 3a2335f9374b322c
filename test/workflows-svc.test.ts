/**
 * The workflow protocol in the default `Svc` mode, spoken by the test itself: a three-step
 * workflow whose second step fails until it is "fixed" lands in the workflow DLQ, is resumed in
 * bulk by label with `count=1` (cursor returned), and completes with the first step's result
 * reused. Also: the lazy-fetch form of the history (`GET /v2/workflows/runs/{id}`).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/core/clock.js';
import { STORAGES, startFerry, type TestFerry } from './helpers/ferry.js';
import { startReceiver, type Received, type Receiver } from './helpers/receiver.js';

interface RawStep {
  messageId: string;
  body: string;
  callType: string;
}

describe.each(STORAGES)('workflow protocol with Svc- headers (%s)', (storage) => {
  let t: TestFerry;
  let clock: ManualClock;
  let endpoint: Receiver;
  let failures: Receiver;
  let fixed = false;
  const sideEffects: string[] = [];

  async function drive(): Promise<void> {
    for (let round = 0; round < 50; round++) if ((await t.ferry.engine.runOnce()) === 0) return;
    throw new Error('did not settle');
  }

  /** The history a delivery carries, fetched from Ferry when the body is empty (lazy fetch). */
  async function history(req: Received): Promise<RawStep[]> {
    if (req.body.byteLength > 0) return JSON.parse(req.body.toString()) as RawStep[];
    const runId = req.headers['svc-workflow-runid'] as string;
    const all = (await (await t.api(`/v2/workflows/runs/${runId}`)).json()) as RawStep[];
    const at = all.findIndex((s) => s.messageId === req.headers['svc-message-id']);
    return all.slice(0, at + 1);
  }

  /** One workflow endpoint: runs the step after the last one in the history, as the SDK would. */
  async function step(req: Received): Promise<{ status: number }> {
    const runId = req.headers['svc-workflow-runid'] as string;
    const steps = await history(req);
    const payload = Buffer.from(steps[0]?.body ?? '', 'base64').toString();
    const outs = steps
      .slice(1)
      .map((s) => JSON.parse(Buffer.from(s.body, 'base64').toString()) as { out: string });
    const publish = (stepId: number, out: string) =>
      t.api(`/v2/publish/${endpoint.url}/wf`, {
        method: 'POST',
        headers: {
          'Svc-Workflow-RunId': runId,
          'Svc-Workflow-Init': 'false',
          'Content-Type': 'application/json',
        },
        body: JSON.stringify({
          stepId,
          stepName: `s${stepId}`,
          stepType: 'Run',
          out,
          concurrent: 1,
        }),
      });
    if (outs.length === 0) {
      sideEffects.push(payload);
      await publish(1, `one-${payload}`);
    } else if (outs.length === 1) {
      if (!fixed) return { status: 500 };
      await publish(2, `${outs[0]?.out}-two`);
    } else if (outs.length === 2) {
      await publish(3, `${outs[1]?.out}-three`);
    } else {
      await t.api(`/v2/workflows/runs/${runId}?cancel=false`, {
        method: 'DELETE',
        body: JSON.stringify(outs[2]?.out),
      });
    }
    return { status: 200 };
  }

  beforeAll(async () => {
    clock = new ManualClock(Date.now());
    t = await startFerry({ storage, clock, engine: false });
    endpoint = await startReceiver((req) => step(req));
    failures = await startReceiver(() => ({ status: 200 }));
  });
  afterAll(async () => {
    await t.close();
    await endpoint.close();
    await failures.close();
  });

  const trigger = (runId: string, payload: string, label: string) =>
    t.api(`/v2/publish/${endpoint.url}/wf`, {
      method: 'POST',
      headers: {
        'Svc-Workflow-RunId': runId,
        'Svc-Workflow-Init': 'true',
        'Svc-Label': label,
        'Svc-Retries': '0',
        'Svc-Failure-Callback': `${failures.url}/failed`,
      },
      body: payload,
    });

  it('fails into the DLQ, resumes in bulk by label with count 1, reuses the first step', async () => {
    expect((await trigger('wfr_svc-a', 'a', 'billing')).status).toBe(200);
    expect((await trigger('wfr_svc-b', 'b', 'billing')).status).toBe(200);
    expect((await trigger('wfr_svc-c', 'c', 'other')).status).toBe(200);
    // The same run id again: a duplicate, not a second run.
    expect(await (await trigger('wfr_svc-a', 'a', 'billing')).json()).toMatchObject({
      deduplicated: true,
    });
    await drive();

    expect(failures.requests).toHaveLength(3);
    const failure = JSON.parse(failures.requests[0]?.body.toString() ?? '') as Record<
      string,
      unknown
    >;
    expect(failure).toMatchObject({ status: 500, workflowUrl: `${endpoint.url}/wf` });
    expect(failures.requests[0]?.headers['svc-workflow-failure-callback']).toBe('true');
    const dlq = (await (await t.api('/v2/dlq?source=workflow&label=billing')).json()) as {
      messages: { dlqId: string; workflowRunId: string; failureFunctionState: string }[];
    };
    expect(dlq.messages.map((m) => m.workflowRunId).sort()).toEqual(['wfr_svc-a', 'wfr_svc-b']);
    expect(dlq.messages[0]?.failureFunctionState).toBe('CALLBACK_SUCCESS');
    const same = (await (await t.api('/v2/workflows/dlq?label=billing')).json()) as typeof dlq;
    expect(same.messages.map((m) => m.dlqId)).toEqual(dlq.messages.map((m) => m.dlqId));

    fixed = true;
    const resume = (cursor?: string) =>
      t
        .api(`/v2/workflows/dlq/resume?label=billing&count=1${cursor ? `&cursor=${cursor}` : ''}`, {
          method: 'POST',
          headers: { 'Svc-Retries': '2' },
        })
        .then(
          async (r) =>
            (await r.json()) as {
              workflowRuns: { workflowRunId: string; workflowCreatedAt: number }[];
              cursor: string;
            },
        );
    const first = await resume();
    expect(first.workflowRuns).toHaveLength(1);
    expect(first.cursor).not.toBe('');
    const second = await resume(first.cursor);
    expect(second.workflowRuns).toHaveLength(1);
    expect(second.cursor).toBe('');
    await drive();

    const logs = (await (
      await t.api('/v2/workflows/logs?label=billing&state=RUN_SUCCESS')
    ).json()) as {
      runs: { workflowRunResponse: string; resumedFrom: { runId: string } }[];
    };
    expect(logs.runs.map((r) => JSON.parse(r.workflowRunResponse) as string).sort()).toEqual([
      'one-a-two-three',
      'one-b-two-three',
    ]);
    expect(sideEffects.sort()).toEqual(['a', 'b', 'c']);
    const left = (await (await t.api('/v2/workflows/dlq')).json()) as typeof dlq;
    expect(left.messages.map((m) => m.workflowRunId)).toEqual(['wfr_svc-c']);

    // The Ferry SDK: logs, the workflow DLQ, and a restart (from the first step: it runs again).
    const { runs } = await t.client.workflows.logs({
      filter: { label: 'billing', state: 'RUN_SUCCESS' },
    });
    expect(runs).toHaveLength(2);
    const { messages } = await t.client.workflows.dlq();
    const [entry] = messages;
    const byId = await t.client.workflows.dlq({ filter: { dlqId: entry?.dlqId ?? '' } });
    expect(byId.messages.map((m) => m.workflowRunId)).toEqual([entry?.workflowRunId]);
    const none = await t.client.workflows.dlq({ filter: { dlqId: 'dlq_nosuch' } });
    expect(none.messages).toEqual([]);
    const restarted = await t.client.workflows.resume(
      { dlqIds: messages.map((m) => m.dlqId) },
      { restart: true },
    );
    expect(restarted.workflowRuns).toHaveLength(1);
    await drive();
    const [run] = (
      await t.client.workflows.logs({
        filter: { workflowRunId: restarted.workflowRuns[0]?.workflowRunId },
      })
    ).runs;
    expect(run?.workflowState).toBe('RUN_SUCCESS');
    expect(run?.resumedFrom).toEqual({ runId: 'wfr_svc-c', kind: 'restart' });
    expect(sideEffects.sort()).toEqual(['a', 'b', 'c', 'c']);
    expect((await t.client.workflows.dlq()).messages).toEqual([]);
  });

  it('a resume without any parameter resumes every run in the DLQ', async () => {
    fixed = false;
    expect((await trigger('wfr_svc-all1', 'x', 'all-1')).status).toBe(200);
    expect((await trigger('wfr_svc-all2', 'y', 'all-2')).status).toBe(200);
    await drive();
    const dlq = async () =>
      ((await (await t.api('/v2/workflows/dlq')).json()) as { messages: unknown[] }).messages;
    expect((await dlq()).length).toBeGreaterThanOrEqual(2);
    fixed = true;
    const res = await t.api('/v2/workflows/dlq/resume', { method: 'POST' });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { workflowRuns: unknown[]; cursor: string };
    expect(body.cursor).toBe('');
    expect(await dlq()).toEqual([]);
    await drive();
    const logs = (await (
      await t.api('/v2/workflows/logs?state=RUN_SUCCESS&label=all-1')
    ).json()) as { runs: { resumedFrom?: { runId: string } }[] };
    expect(logs.runs.map((r) => r.resumedFrom?.runId)).toEqual(['wfr_svc-all1']);
  });

  it('resume applies its override headers to the remaining steps', async () => {
    fixed = false;
    try {
      expect((await trigger('wfr_svc-ovr', 'o', 'ovr')).status).toBe(200);
      await drive();
      const dlq = (await (await t.api('/v2/workflows/dlq?label=ovr')).json()) as {
        messages: { dlqId: string }[];
      };
      expect(dlq.messages).toHaveLength(1);
      fixed = true;
      const resumed = await t.api(`/v2/workflows/dlq/resume?dlqIds=${dlq.messages[0]?.dlqId}`, {
        method: 'POST',
        headers: {
          'Svc-Retries': '2',
          'Svc-Delay': '30s',
          'Svc-Retry-Delay': '1000 * retried',
          'Svc-Label': 'overridden',
          'Svc-Flow-Control-Key': 'ovr-key',
          'Svc-Flow-Control-Value': 'parallelism=1',
        },
      });
      expect(resumed.status).toBe(200);
      const { workflowRuns } = (await resumed.json()) as {
        workflowRuns: { workflowRunId: string }[];
      };
      const runId = workflowRuns[0]?.workflowRunId ?? '';
      // The resumed step waits for Svc-Delay and carries the other overrides.
      expect(await t.ferry.engine.runOnce()).toBe(0);
      const created = (await (await t.api(`/v2/events?state=CREATED&label=overridden`)).json()) as {
        events: Record<string, unknown>[];
      };
      expect(created.events).toHaveLength(1);
      expect(created.events[0]).toMatchObject({ maxRetries: 2, flowControlKey: 'ovr-key' });
      const message = (await (
        await t.api(`/v2/messages/${String(created.events[0]?.messageId)}`)
      ).json()) as Record<string, unknown>;
      expect(message).toMatchObject({
        retryDelayExpression: '1000 * retried',
        parallelism: 1,
        labels: ['overridden'],
      });
      expect(message.notBefore).toBe(clock.now() + 30_000);
      clock.advance(30_000);
      await drive();
      const [run] = (
        (await (await t.api(`/v2/workflows/logs?workflowRunId=${runId}`)).json()) as {
          runs: { workflowState: string }[];
        }
      ).runs;
      expect(run?.workflowState).toBe('RUN_SUCCESS');
    } finally {
      fixed = true;
    }
  });

  it('resumes and restarts a list of DLQ ids given in the body (…/multi)', async () => {
    fixed = false;
    try {
      for (const [runId, label] of [
        ['wfr_svc-m1', 'multi-1'],
        ['wfr_svc-m2', 'multi-2'],
        ['wfr_svc-m3', 'multi-3'],
      ] as const) {
        expect((await trigger(runId, runId, label)).status).toBe(200);
      }
      await drive();
      const dlqIdOf = async (label: string) => {
        const dlq = (await (await t.api(`/v2/workflows/dlq?label=${label}`)).json()) as {
          messages: { dlqId: string }[];
        };
        return dlq.messages[0]?.dlqId ?? '';
      };
      const [m1, m2, m3] = [
        await dlqIdOf('multi-1'),
        await dlqIdOf('multi-2'),
        await dlqIdOf('multi-3'),
      ];
      const multi = (kind: string, body: string) =>
        t.api(`/v2/workflows/dlq/${kind}/multi`, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json', 'Svc-Label': 'multi-done' },
          body,
        });

      // One unknown id: 404 naming it, and nothing is resumed.
      const unknown = await multi('resume', JSON.stringify({ dlqIds: [m1, 'dlq_nope'] }));
      expect(unknown.status).toBe(404);
      expect(((await unknown.json()) as { error: string }).error).toContain('"dlq_nope" not found');
      expect(await dlqIdOf('multi-1')).toBe(m1);
      for (const body of ['', '{}', '{"dlqIds":[]}', '{"dlqIds":"x"}', '{"dlqIds":["a"],"x":1}']) {
        const bad = await multi('resume', body);
        expect(bad.status, body).toBe(400);
        expect(((await bad.json()) as { error: string }).error, body).toMatch(/body|dlqIds/);
      }

      fixed = true;
      const resumed = await multi('resume', JSON.stringify({ dlqIds: [m1, m2, m1] }));
      expect(resumed.status).toBe(200);
      const { workflowRuns } = (await resumed.json()) as {
        workflowRuns: { workflowRunId: string; workflowCreatedAt: number }[];
      };
      expect(workflowRuns).toHaveLength(2);
      const restarted = await multi('restart', JSON.stringify({ dlqIds: [m3] }));
      expect(restarted.status).toBe(200);
      await drive();
      const logs = (await (
        await t.api('/v2/workflows/logs?label=multi-done&state=RUN_SUCCESS')
      ).json()) as { runs: { resumedFrom: { runId: string; kind: string } }[] };
      expect(
        logs.runs.map((r) => r.resumedFrom).sort((a, b) => a.runId.localeCompare(b.runId)),
      ).toEqual([
        { runId: 'wfr_svc-m1', kind: 'resume' },
        { runId: 'wfr_svc-m2', kind: 'resume' },
        { runId: 'wfr_svc-m3', kind: 'restart' },
      ]);
      for (const label of ['multi-1', 'multi-2', 'multi-3']) expect(await dlqIdOf(label)).toBe('');
    } finally {
      fixed = true;
    }
  });

  it('resume with Svc-Failure-Callback: a run that fails again calls the new failure URL', async () => {
    fixed = false;
    try {
      expect((await trigger('wfr_svc-fcb', 'f', 'fcb')).status).toBe(200);
      await drive();
      const dlq = (await (await t.api('/v2/workflows/dlq?label=fcb')).json()) as {
        messages: { dlqId: string }[];
      };
      const before = failures.requests.length;
      const resumed = await t.api(`/v2/workflows/dlq/resume?dlqIds=${dlq.messages[0]?.dlqId}`, {
        method: 'POST',
        headers: { 'Svc-Failure-Callback': `${failures.url}/override` },
      });
      expect(resumed.status).toBe(200);
      await drive(); // still broken: the resumed run fails again
      const calls = failures.requests.slice(before).map((r) => r.path);
      expect(calls).toEqual(['/override']);
    } finally {
      fixed = true;
    }
  });

  it('a failure function cancelled by the user shows CALLBACK_CANCELED', async () => {
    fixed = false;
    try {
      expect((await trigger('wfr_svc-cancel', 'x', 'cancel')).status).toBe(200);
      const before = failures.requests.length;
      await t.ferry.engine.runOnce(); // the trigger: the endpoint publishes step 1
      await t.ferry.engine.runOnce(); // step 1 fails: the run fails, its failure call is stored
      const dlq = (await (await t.api('/v2/workflows/dlq?label=cancel')).json()) as {
        messages: { failureFunctionState: string; failureCallbackInfo?: { messageId: string } }[];
      };
      expect(dlq.messages[0]?.failureFunctionState).toBe('CALLBACK_INPROGRESS');
      // The failure call is a message of its own: cancelling it cancels the failure function.
      const callId = dlq.messages[0]?.failureCallbackInfo?.messageId ?? '';
      expect((await t.api(`/v2/messages/${callId}`, { method: 'DELETE' })).status).toBe(200);
      await drive();
      expect(failures.requests).toHaveLength(before); // never called
      const after = (await (await t.api('/v2/workflows/dlq?label=cancel')).json()) as typeof dlq;
      expect(after.messages[0]?.failureFunctionState).toBe('CALLBACK_CANCELED');
      const filtered = (await (
        await t.api('/v2/workflows/dlq?failureFunctionState=CALLBACK_CANCELED')
      ).json()) as typeof dlq;
      expect(filtered.messages).toHaveLength(1);
    } finally {
      fixed = true;
    }
  });

  it('rejects bad input with 400 naming the field', async () => {
    const bad = await t.api(`/v2/publish/${endpoint.url}/wf`, {
      method: 'POST',
      headers: { 'Svc-Workflow-RunId': 'wfr bad id' },
    });
    expect(bad.status).toBe(400);
    expect(await bad.text()).toContain('Svc-Workflow-RunId');
    const ended = await t.api(`/v2/publish/${endpoint.url}/wf`, {
      method: 'POST',
      headers: { 'Svc-Workflow-RunId': 'wfr_unknown' },
    });
    expect(ended.status).toBe(400);
    // A label beyond Latin-1 (as a query parameter) could not go with the run's deliveries.
    const label = await t.api(
      `/v2/publish/${endpoint.url}/wf?svc-label=${encodeURIComponent('注文')}`,
      {
        method: 'POST',
        headers: { 'Svc-Workflow-RunId': 'wfr_label', 'Svc-Workflow-Init': 'true' },
      },
    );
    expect(label.status).toBe(400);
    expect(((await label.json()) as { error: string }).error).toContain(
      'invalid Svc-Label "注文": a workflow run',
    );
    const filter = await t.api('/v2/workflows/dlq/resume?labeel=x', { method: 'POST' });
    expect(filter.status).toBe(400);
    // Cancels and DLQ deletes need a filter or a count; a bare resume resumes all (see above).
    for (const path of ['/v2/workflows/runs', '/v2/workflows/dlq']) {
      const bare = await t.api(path, { method: 'DELETE' });
      expect(bare.status).toBe(400);
      expect(await bare.text()).toContain('give a filter');
    }
  });
});

describe('lazy fetch of the history', () => {
  it('sends an empty body past the inline limit; the history comes from GET /v2/workflows/runs/{id}', async () => {
    const clock = new ManualClock(Date.now());
    const t = await startFerry({ clock, engine: false, args: ['--workflow-inline-history', '0'] });
    const seen: Received[] = [];
    const endpoint = await startReceiver((req) => {
      seen.push(req);
      return { status: 200 };
    });
    try {
      await t.api(`/v2/publish/${endpoint.url}/wf`, {
        method: 'POST',
        headers: { 'Svc-Workflow-RunId': 'wfr_lazy', 'Svc-Workflow-Init': 'true' },
        body: 'payload',
      });
      await t.ferry.engine.runOnce();
      expect(seen[0]?.body.byteLength).toBe(0);
      const steps = (await (await t.api('/v2/workflows/runs/wfr_lazy')).json()) as RawStep[];
      expect(steps).toEqual([
        {
          messageId: seen[0]?.headers['svc-message-id'],
          body: Buffer.from('payload').toString('base64'),
          callType: 'step',
        },
      ]);
    } finally {
      await t.close();
      await endpoint.close();
    }
  });
});

describe('the logs of a step', () => {
  it("show Ferry's own id, state and settings even when the step's body names them", async () => {
    const clock = new ManualClock(Date.now());
    const t = await startFerry({ clock, engine: false });
    const endpoint = await startReceiver(() => ({ status: 200 }));
    try {
      const headers = { 'Svc-Workflow-RunId': 'wfr_spoof', 'Content-Type': 'application/json' };
      const url = `/v2/publish/${endpoint.url}/wf`;
      const init = { ...headers, 'Svc-Workflow-Init': 'true' };
      expect((await t.api(url, { method: 'POST', headers: init, body: 'p' })).status).toBe(200);
      // A step result whose body (untrusted: whatever the endpoint sent) claims other values.
      const body = JSON.stringify({
        stepId: 1,
        stepName: 's1',
        stepType: 'Run',
        out: 'x',
        concurrent: 1,
        messageId: 'msg_spoofed',
        state: 'STEP_FAILED',
        createdAt: 1,
        retries: 99,
        headers: { 'X-Fake': ['yes'] },
      });
      const step = { ...headers, 'Svc-Workflow-Init': 'false', 'Svc-Retries': '2' };
      const published = await t.api(url, { method: 'POST', headers: step, body });
      const { messageId } = (await published.json()) as { messageId: string };
      const logs = (await (await t.api('/v2/workflows/logs?workflowRunId=wfr_spoof')).json()) as {
        runs: { steps: { steps: Record<string, unknown>[] }[] }[];
      };
      const shown = logs.runs[0]?.steps.flatMap((g) => g.steps).find((s) => s.stepId === 1);
      expect(shown).toMatchObject({ messageId, state: 'STEP_SUCCESS', retries: 2, out: 'x' });
      expect(shown?.createdAt).toBe(clock.now());
      expect(shown?.headers).not.toHaveProperty('X-Fake');
    } finally {
      await t.close();
      await endpoint.close();
    }
  });
});
