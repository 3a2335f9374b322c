/**
 * `context.invoke` in the default `Svc` mode, the protocol spoken by the test itself: a parent
 * run publishes a trigger with `Svc-Workflow-Invoke: true` and an invoke request as its body; the
 * invoked run gets the request's `body` as its payload, and its result comes back to the parent
 * as the invoke step, `out` = `{body, isFailed, isCanceled}`. Deliveries only through
 * `engine.runOnce()`.
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

const decode = (b64: string) => Buffer.from(b64, 'base64').toString();

describe.each(STORAGES)('context.invoke with Svc- headers (%s)', (storage) => {
  let t: TestFerry;
  let endpoint: Receiver;
  const childPayloads: string[] = [];
  const invokeSteps: Record<string, unknown>[] = [];

  async function drive(): Promise<void> {
    for (let round = 0; round < 50; round++) if ((await t.ferry.engine.runOnce()) === 0) return;
    throw new Error('did not settle');
  }

  async function handle(req: Received): Promise<{ status: number }> {
    const runId = req.headers['svc-workflow-runid'] as string;
    const steps = JSON.parse(req.body.toString()) as RawStep[];
    const end = (result: string) =>
      t.api(`/v2/workflows/runs/${runId}?cancel=false`, { method: 'DELETE', body: result });
    if (req.path === '/child') {
      const payload = decode(steps[0]?.body ?? '');
      childPayloads.push(payload);
      await end(JSON.stringify(`child got ${payload}`));
      return { status: 200 };
    }
    // The parent: invoke the child first, then end with what it returned.
    if (steps.length === 1) {
      const res = await t.api(`/v2/publish/${endpoint.url}/child`, {
        method: 'POST',
        headers: {
          'Svc-Workflow-Init': 'true',
          'Svc-Workflow-Invoke': 'true',
          'Svc-Workflow-RunId': `${runId}-child`,
          'Svc-Workflow-Url': `${endpoint.url}/child`,
          'Svc-Forward-Svc-Workflow-Invoke-Count': '1',
        },
        body: JSON.stringify({
          workflowRunId: runId,
          workflowRunCreatedAt: Number(req.headers['svc-workflow-createdat']),
          workflowUrl: `${endpoint.url}/parent`,
          headers: {},
          step: { stepId: 1, stepName: 'invoke-child', stepType: 'Invoke', concurrent: 1 },
          body: 'hello',
        }),
      });
      expect(res.status).toBe(200);
      return { status: 200 };
    }
    const step = JSON.parse(decode(steps[1]?.body ?? '')) as Record<string, unknown>;
    invokeSteps.push(step);
    await end(String(step.out));
    return { status: 200 };
  }

  beforeAll(async () => {
    t = await startFerry({ storage, clock: new ManualClock(Date.now()), engine: false });
    endpoint = await startReceiver((req) => handle(req));
  });
  afterAll(async () => {
    await t.close();
    await endpoint.close();
  });

  it('the invoked run gets the payload, and its result resumes the parent', async () => {
    const res = await t.api(`/v2/publish/${endpoint.url}/parent`, {
      method: 'POST',
      headers: { 'Svc-Workflow-RunId': 'wfr_svc-parent', 'Svc-Workflow-Init': 'true' },
      body: 'start',
    });
    expect(res.status).toBe(200);
    await drive();
    expect(childPayloads).toEqual(['hello']);
    expect(invokeSteps).toHaveLength(1);
    expect(invokeSteps[0]).toMatchObject({
      stepId: 1,
      stepName: 'invoke-child',
      stepType: 'Invoke',
      invokedWorkflowRunId: 'wfr_svc-parent-child',
      invokedWorkflowUrl: `${endpoint.url}/child`,
    });
    expect(JSON.parse(String(invokeSteps[0]?.out))).toEqual({
      body: JSON.stringify('child got hello'),
      isFailed: false,
      isCanceled: false,
    });
    const logs = (await (
      await t.api('/v2/workflows/logs?workflowRunId=wfr_svc-parent-child')
    ).json()) as {
      runs: { workflowState: string; invoker?: { workflowRunId: string } }[];
    };
    expect(logs.runs[0]).toMatchObject({
      workflowState: 'RUN_SUCCESS',
      invoker: { workflowRunId: 'wfr_svc-parent' },
    });
    const parent = (await (
      await t.api('/v2/workflows/logs?workflowRunId=wfr_svc-parent')
    ).json()) as {
      runs: { workflowState: string }[];
    };
    expect(parent.runs[0]?.workflowState).toBe('RUN_SUCCESS');
  });

  it('refuses an invoke chain deeper than 100', async () => {
    const res = await t.api(`/v2/publish/${endpoint.url}/child`, {
      method: 'POST',
      headers: {
        'Svc-Workflow-Init': 'true',
        'Svc-Workflow-Invoke': 'true',
        'Svc-Workflow-RunId': 'wfr_deep',
        'Svc-Forward-Svc-Workflow-Invoke-Count': '101',
      },
      body: JSON.stringify({ workflowRunId: 'wfr_any', step: { stepId: 1 } }),
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toContain('more than 100');
  });
});
