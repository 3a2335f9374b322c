/**
 * `context.invoke` with the official `@upstash/workflow` SDK against Ferry in `Upstash` mode: a
 * run starts another workflow (by its `workflowId`, a sibling path of its URL), waits, and goes
 * on with the invoked run's result, its failure or its cancel; the invoked run is a run of its
 * own, linked to its invoker; another account cannot invoke for a run it does not own. Time is
 * the manual clock; deliveries happen only through `engine.runOnce()`.
 */
import type { Client as QStashClient } from '@upstash/qstash';
import {
  serve,
  WorkflowNonRetryableError,
  type Client,
  type InvokableWorkflow,
  type WorkflowContext,
} from '@upstash/workflow';
import { beforeAll, describe, expect, it } from 'vitest';
import { createAccount } from '../src/cli/credentials.js';
import type { ManualClock } from '../src/core/clock.js';
import { STORAGES, type TestFerry } from './helpers/ferry.js';
import {
  serveOptions,
  settle,
  upstashClients,
  useUpstashWorkflows,
  type WorkflowServer,
} from './helpers/workflow-server.js';

describe.each(STORAGES)('context.invoke with the official SDK (%s)', (storage) => {
  let t: TestFerry;
  let clock: ManualClock;
  let server: WorkflowServer;
  let client: Client;
  let qstash: QStashClient;

  const drive = () => settle(t.ferry.engine);

  /**
   * Serves `fn` at `/inv/{id}` and returns it as the SDK's invokable workflow (what
   * `createWorkflow` + `serveMany` build: the id is the last path segment of its URL).
   */
  function workflow<T, R>(
    id: string,
    fn: (context: WorkflowContext<T>) => Promise<R>,
  ): InvokableWorkflow<T, R> {
    const url = `${server.url}/inv/${id}`;
    const options = serveOptions(qstash, t.account, url);
    server.route(`/inv/${id}`, serve<T, Request, Response, R>(fn, options).handler);
    return { routeFunction: fn, options, workflowId: id };
  }

  /** The account's metered workflow runs and messages so far (the meter flushed). */
  async function metered(): Promise<{ runs: number; messages: number }> {
    await t.ferry.meter.runOnce();
    const day = 86_400_000;
    const buckets = await t.ferry.driver.executor.usageSumByStep({
      subjectId: t.account.id,
      from: clock.now() - day,
      to: clock.now() + day,
      stepMs: 2 * day,
      metrics: ['workflow_run', 'workflow_message'],
    });
    const sum = (metric: string) =>
      buckets.filter((b) => b.metric === metric).reduce((n, b) => n + b.value, 0);
    return { runs: sum('workflow_run'), messages: sum('workflow_message') };
  }

  async function runOf(workflowRunId: string) {
    const [run] = (await client.logs({ workflowRunId })).runs;
    return run;
  }

  const setup = useUpstashWorkflows(storage);
  beforeAll(() => void ({ t, clock, server, qstash, client } = setup));

  it('invokes a workflow, waits for it, and goes on with its result', async () => {
    const seen: { payload?: unknown; header?: string | null; invokeCount?: string | null } = {};
    const child = workflow<{ n: number }, { tenfold: number }>('times-ten', async (context) => {
      seen.payload = context.requestPayload;
      seen.header = context.headers.get('x-order');
      const tenfold = await context.run('multiply', () => context.requestPayload.n * 10);
      return { tenfold };
    });
    let parentBefore = 0;
    const parent = workflow<{ n: number }, unknown>('parent-ok', async (context) => {
      const n = await context.run('before', () => {
        parentBefore++;
        return context.requestPayload.n + 1;
      });
      const result = await context.invoke('call-child', {
        workflow: child,
        body: { n },
        headers: { 'x-order': 'o-7' },
        workflowRunId: `child-of-${context.workflowRunId}`,
        retries: 0,
        label: 'invoked',
      });
      return await context.run('after', () => ({ n, ...result }));
    });
    const before = await metered();
    const { workflowRunId } = await client.trigger({
      url: `${server.url}/inv/parent-ok`,
      body: { n: 1 },
    });
    expect(parent.workflowId).toBe('parent-ok');
    await drive();

    const run = await runOf(workflowRunId);
    expect(run?.workflowState).toBe('RUN_SUCCESS');
    expect(JSON.parse(run?.workflowRunResponse ?? '')).toEqual({
      n: 2,
      body: { tenfold: 20 },
      isFailed: false,
      isCanceled: false,
    });
    expect(parentBefore).toBe(1);
    expect(seen).toEqual({ payload: { n: 2 }, header: 'o-7' });

    // The invoked run is a run of its own, with the id, label and payload the invoke gave it,
    // linked to its invoker; the invoker's step names it.
    const childRunId = `wfr_child-of-${workflowRunId}`;
    const childRun = await runOf(childRunId);
    expect(childRun).toMatchObject({
      workflowState: 'RUN_SUCCESS',
      workflowUrl: `${server.url}/inv/times-ten`,
      label: 'invoked',
      invoker: { workflowRunId, workflowUrl: `${server.url}/inv/parent-ok` },
    });
    expect(JSON.parse(childRun?.workflowRunResponse ?? '')).toEqual({ tenfold: 20 });
    const steps = (run?.steps ?? []).flatMap(
      (g) => g.steps as unknown as Record<string, unknown>[],
    );
    const invokeStep = steps.find((s) => s.stepName === 'call-child');
    expect(invokeStep).toMatchObject({ stepType: 'Invoke', invokedWorkflowRunId: childRunId });
    // Metering: two runs; the parent's trigger, two steps and invoke result, the child's trigger
    // and step.
    const after = await metered();
    expect({ runs: after.runs - before.runs, messages: after.messages - before.messages }).toEqual({
      runs: 2,
      messages: 6,
    });
  });

  it('an invoked run that fails or is cancelled resumes its invoker with isFailed / isCanceled', async () => {
    const failing = workflow<string, string>('always-fails', async (context) => {
      await context.run('explode', () => {
        throw new WorkflowNonRetryableError('child broke');
      });
      return 'never';
    });
    const sleepy = workflow<string, string>('sleeps', async (context) => {
      await context.sleep('nap', 3600);
      return 'woke';
    });
    workflow<string, unknown>('parent-bad', async (context) => {
      const failed = await context.invoke('call-failing', { workflow: failing, body: 'x' });
      const cancelled = await context.invoke('call-sleepy', {
        workflow: sleepy,
        body: 'y',
        workflowRunId: `sleepy-${context.workflowRunId}`,
      });
      return { failed, cancelled };
    });
    const { workflowRunId } = await client.trigger({ url: `${server.url}/inv/parent-bad` });
    await drive();
    // The failing child is in the workflow DLQ; the parent now waits for the sleeping one.
    const dlq = await client.dlq.list({
      filter: { workflowUrl: `${server.url}/inv/always-fails` },
    });
    expect(dlq.messages).toHaveLength(1);
    expect((await runOf(workflowRunId))?.workflowState).toBe('RUN_STARTED');

    await client.cancel({ ids: `wfr_sleepy-${workflowRunId}` });
    await drive();
    const run = await runOf(workflowRunId);
    expect(run?.workflowState).toBe('RUN_SUCCESS');
    const result = JSON.parse(run?.workflowRunResponse ?? '') as {
      failed: { isFailed: boolean; isCanceled: boolean; body: unknown };
      cancelled: { isFailed: boolean; isCanceled: boolean; body?: unknown };
    };
    expect(result.failed).toMatchObject({ isFailed: true, isCanceled: false });
    expect(JSON.stringify(result.failed.body)).toContain('child broke');
    expect(result.cancelled).toEqual({ isFailed: false, isCanceled: true });
    // The cancelled child's sleep, when it comes due, is not delivered.
    const sleepyCalls = server.hits.get('/inv/sleeps');
    clock.advance(3_600_000);
    await drive();
    expect(server.hits.get('/inv/sleeps')).toBe(sleepyCalls);
  });

  it('refuses an invoke for a run of another account, or for a run that has ended', async () => {
    let parentRunId = '';
    const child = workflow<string, string>('child-iso', (context) =>
      context.run('only', () => 'ok'),
    );
    workflow<string, unknown>('parent-iso', async (context) => {
      parentRunId = context.workflowRunId;
      await context.sleep('hold', 60);
      return context.invoke('call', { workflow: child, body: 'z' });
    });
    const { workflowRunId } = await client.trigger({ url: `${server.url}/inv/parent-iso` });
    await drive();
    expect(parentRunId).toBe(workflowRunId);

    const invokeBody = JSON.stringify({
      workflowRunId,
      workflowRunCreatedAt: 0,
      workflowUrl: `${server.url}/inv/parent-iso`,
      headers: {},
      step: { stepId: 1, stepName: 'call', stepType: 'Invoke', concurrent: 1 },
      body: 'evil',
    });
    const invokeHeaders = {
      'Upstash-Workflow-Init': 'true',
      'Upstash-Workflow-Invoke': 'true',
      'Upstash-Workflow-RunId': 'wfr_intruder',
      'Upstash-Workflow-Url': `${server.url}/inv/child-iso`,
    };
    const other = await createAccount({
      executor: t.ferry.driver.executor,
      plan: 'paid',
      now: clock.now(),
    });
    const intruder = await fetch(`${t.url}/v2/publish/${server.url}/inv/child-iso`, {
      method: 'POST',
      headers: { authorization: `Bearer ${other.token}`, ...invokeHeaders },
      body: invokeBody,
    });
    expect(intruder.status).toBe(400);
    expect(((await intruder.json()) as { error: string }).error).toContain('does not exist');
    // Nor can it see the run through the logs.
    const otherClient = upstashClients({ url: t.url, token: other.token }).client;
    expect((await otherClient.logs({ workflowRunId })).runs).toEqual([]);

    const malformed = await t.api(`/v2/publish/${server.url}/inv/child-iso`, {
      method: 'POST',
      headers: invokeHeaders,
      body: '{"step": 1}',
    });
    expect(malformed.status).toBe(400);
    expect(((await malformed.json()) as { error: string }).error).toContain('invoke request');

    await client.cancel({ ids: workflowRunId });
    const ended = await t.api(`/v2/publish/${server.url}/inv/child-iso`, {
      method: 'POST',
      headers: invokeHeaders,
      body: invokeBody,
    });
    expect(ended.status).toBe(400);
    expect(((await ended.json()) as { error: string }).error).toContain('has ended');
  });
});
