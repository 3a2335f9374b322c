/**
 * With `--header-prefix Upstash`, workflows written with the official `@upstash/workflow` SDK
 * run against Ferry unchanged: sequential steps, sleep, parallel steps, `context.call`, the
 * result, cancel, the logs (a running run's `next` group too, a call in flight included),
 * failure (failure function, workflow DLQ) and bulk resume. Time is the
 * manual clock; deliveries happen only through `engine.runOnce()`.
 */
import { createHash } from 'node:crypto';
import type { Client as QStashClient } from '@upstash/qstash';
import { serve, type Client, type WorkflowContext } from '@upstash/workflow';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/core/clock.js';
import { STORAGES, startFerry, type TestFerry } from './helpers/ferry.js';
import { startReceiver, type Receiver as Destination } from './helpers/receiver.js';
import {
  serveOptions,
  settle,
  startWorkflowServer,
  upstashClients,
  type WorkflowServer,
} from './helpers/workflow-server.js';

/** The fields of a step in the logs these tests read (the SDK's `BaseStepLog` has them all). */
interface StepLog {
  messageId: string;
  stepName?: string;
  state: string;
  retries: number;
  retryDelay?: string;
  headers?: Record<string, string[]>;
}
const stepsOf = (group: { steps: unknown[] } | undefined): StepLog[] =>
  (group?.steps ?? []) as StepLog[];

describe.each(STORAGES)('official @upstash/workflow SDK against Ferry (%s)', (storage) => {
  let t: TestFerry;
  let clock: ManualClock;
  let server: WorkflowServer;
  let third: Destination;
  let client: Client;
  let qstash: QStashClient;

  /** Delivers until nothing is due now; returns the attempts made. */
  const drive = () => settle(t.ferry.engine);

  function workflow<T>(
    path: string,
    fn: (context: WorkflowContext<T>) => Promise<unknown>,
    extra = {},
  ) {
    const url = `${server.url}${path}`;
    const { handler } = serve<T>(fn, { ...serveOptions(qstash, t.account, url), ...extra });
    server.route(path, handler);
    return url;
  }

  beforeAll(async () => {
    clock = new ManualClock(Date.now());
    t = await startFerry({ storage, clock, engine: false, args: ['--header-prefix', 'Upstash'] });
    server = await startWorkflowServer();
    third = await startReceiver((req) => ({
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ echoed: req.body.toString(), path: req.path }),
    }));
    ({ qstash, client } = upstashClients(t));
  });
  afterAll(async () => {
    await t.close();
    await server.close();
    await third.close();
  });

  it('runs sequential steps, sleep, parallel steps and context.call to completion', async () => {
    const sideEffects: string[] = [];
    const url = workflow<{ n: number }>('/wf/full', async (context) => {
      const a = await context.run('double', () => {
        sideEffects.push('double');
        return context.requestPayload.n * 2;
      });
      await context.sleep('nap', 60);
      const [b, c] = await Promise.all([
        context.run('plus-one', () => a + 1),
        context.run('plus-two', () => a + 2),
      ]);
      const call = await context.call<{ echoed: string }>('call-third', {
        url: `${third.url}/echo`,
        method: 'POST',
        body: JSON.stringify({ sum: b + c }),
      });
      return { a, b, c, status: call.status, echoed: call.body.echoed };
    });
    const { workflowRunId } = await client.trigger({ url, body: { n: 5 }, label: 'full' });
    expect(workflowRunId).toMatch(/^wfr_/);

    await drive();
    // Held by the sleep: a delayed message, nothing due before 60 s pass.
    let [run] = (await client.logs({ workflowRunId })).runs;
    expect(run?.workflowState).toBe('RUN_STARTED');
    // The run is at the sleep: its message waits for its time, as the last (`next`) group.
    const [sleeping] = stepsOf(run?.steps.at(-1));
    expect(run?.steps.at(-1)?.type).toBe('next');
    expect(sleeping).toEqual({
      messageId: expect.stringMatching(/^msg_/),
      state: 'STEP_PROGRESS',
      retries: 3,
      nextDeliveryTime: clock.now() + 60_000,
    });
    const nap = run?.steps.flatMap(stepsOf).find((step) => step.stepName === 'nap');
    expect(nap?.messageId).toBe(sleeping?.messageId);
    clock.advance(60_000);
    await drive();

    [run] = (await client.logs({ workflowRunId })).runs;
    expect(run?.workflowState).toBe('RUN_SUCCESS');
    expect(JSON.parse(run?.workflowRunResponse ?? '')).toEqual({
      a: 10,
      b: 11,
      c: 12,
      status: 200,
      echoed: JSON.stringify({ sum: 23 }),
    });
    expect(run?.labels).toEqual(['full']);
    expect(sideEffects).toEqual(['double']);
    expect(third.requests).toHaveLength(1);
  });

  it('logs each step with its retries, retry delay and delivery headers (redacted as asked), and a step being retried as the next group', async () => {
    const secret = 'sk_planted_in_a_header';
    let fixed = false;
    const url = workflow<{ n: number }>('/wf/log-fields', async (context) => {
      const one = await context.run('one', () => context.requestPayload.n + 1);
      return context.run('flaky', () => {
        if (!fixed) throw new Error('flaky is down');
        return one * 2;
      });
    });
    const { workflowRunId } = await client.trigger({
      url,
      body: { n: 1 },
      headers: { 'X-User-Header': 'hello', 'X-Secret': secret },
      retries: 2,
      retryDelay: '1000',
      redact: { header: ['X-Secret'] },
    });
    await drive(); // the trigger, step one, and flaky's first attempt, which fails
    const logs = async () => {
      const [run] = (await client.logs({ workflowRunId })).runs;
      if (!run) throw new Error(`run ${workflowRunId} is not in the logs`);
      expect(JSON.stringify(run)).not.toContain(secret);
      return run;
    };
    const hidden = `REDACTED:${createHash('sha256').update(secret).digest('hex')}`;
    const expectDelivery = (step: StepLog | undefined) => {
      expect(step).toMatchObject({ retries: 2, retryDelay: '1000' });
      expect(step?.headers).toMatchObject({
        'Upstash-Workflow-RunId': [workflowRunId],
        'Upstash-Workflow-Url': [url],
        'X-User-Header': ['hello'],
        'X-Secret': [hidden],
      });
    };

    let run = await logs();
    expect(run.workflowState).toBe('RUN_STARTED');
    const [init, one, next, ...rest] = run.steps;
    expect(rest).toEqual([]);
    expect(stepsOf(init)[0]).toMatchObject({ stepName: 'init', state: 'STEP_SUCCESS' });
    expect(stepsOf(one)[0]).toMatchObject({ stepName: 'one', out: '2', state: 'STEP_SUCCESS' });
    for (const group of [init, one]) expectDelivery(stepsOf(group)[0]);
    // Step one's message is being retried: its delivery runs flaky, which threw.
    expect(next?.type).toBe('next');
    expect(stepsOf(next)).toEqual([
      {
        messageId: stepsOf(one)[0]?.messageId,
        // The SDK names the step that threw in its error response (Upstash-Error-Step-Name).
        stepName: 'flaky',
        state: 'STEP_RETRY',
        retries: 2,
        retryDelay: '1000',
        errors: [
          expect.objectContaining({
            error: expect.stringMatching(/^HTTP 500/),
            status: 500,
            body: expect.stringContaining('flaky is down'),
            headers: expect.any(Object),
            time: clock.now(),
          }),
        ],
        nextDeliveryTime: clock.now() + 1000,
      },
    ]);

    fixed = true;
    clock.advance(1000);
    await drive();
    run = await logs();
    expect(run.workflowState).toBe('RUN_SUCCESS');
    const steps = run.steps.flatMap(stepsOf);
    expect(steps.map((step) => step.stepName)).toEqual(['init', 'one', 'flaky']);
    for (const step of steps) expectDelivery(step);
    expect(run.steps.some((group) => group.type === 'next')).toBe(false);
  });

  it('shows a context.call on its way, then its response coming back, as the next group; neither once the run goes on', async () => {
    // The third party answers only when the test lets it, and so does the workflow endpoint to
    // the callback bringing the call's response back: the run is held at each in turn.
    let answer!: () => void;
    const answered = new Promise<void>((resolve) => (answer = resolve));
    const slow = await startReceiver(async () => {
      await answered;
      return { status: 200, body: '{"slow":true}' };
    });
    let passBack!: () => void;
    const passed = new Promise<void>((resolve) => (passBack = resolve));
    let callbackArrived!: () => void;
    const callbackSeen = new Promise<void>((resolve) => (callbackArrived = resolve));
    const path = '/wf/slow-call';
    const url = `${server.url}${path}`;
    const { handler } = serve<{ q: number }>(
      async (context) => {
        const call = await context.call<{ slow: boolean }>('slow-call', {
          url: `${slow.url}/api`,
          method: 'PUT',
          body: JSON.stringify({ q: context.requestPayload.q }),
          headers: { 'X-Call': 'yes', 'X-Secret': 'sk_call_secret' },
        });
        await context.sleep('after-call', 60);
        return call.body.slow;
      },
      serveOptions(qstash, t.account, url),
    );
    server.route(path, async (request) => {
      if (request.headers.get('upstash-workflow-callback') === 'true') {
        callbackArrived();
        await passed;
      }
      return handler(request);
    });
    try {
      const { workflowRunId } = await client.trigger({
        url,
        body: { q: 7 },
        redact: { header: ['X-Secret'] },
      });
      const next = async () => {
        const [run] = (await client.logs({ workflowRunId })).runs;
        expect(run?.workflowState).toBe('RUN_STARTED');
        expect(JSON.stringify(run)).not.toContain('sk_call_secret');
        expect(run?.steps.at(-1)?.type).toBe('next');
        return stepsOf(run?.steps.at(-1)) as unknown as Record<string, unknown>[];
      };
      const driving = drive();
      await slow.waitFor(1);
      // The call's delivery waits for the third party: the run is at the call.
      const [calling, ...others] = await next();
      expect(others).toEqual([]);
      expect(calling).toEqual({
        messageId: expect.stringMatching(/^msg_/),
        stepId: 1,
        stepName: 'slow-call',
        stepType: 'Call',
        concurrent: 1,
        callType: 'toCallback',
        createdAt: expect.any(Number),
        callUrl: `${slow.url}/api`,
        callMethod: 'PUT',
        callHeaders: expect.objectContaining({
          'X-Call': ['yes'],
          'X-Secret': [`REDACTED:${createHash('sha256').update('sk_call_secret').digest('hex')}`],
        }),
        callBody: '{"q":7}',
        state: 'STEP_PROGRESS',
        retries: expect.any(Number),
        nextDeliveryTime: expect.any(Number),
      });
      // The call's message is in no history entry yet: the logs' messageId filter finds the run.
      const byMessage = await client.logs({
        filter: { messageId: String(calling?.messageId) },
      });
      expect(byMessage.runs.map((run) => run.workflowRunId)).toEqual([workflowRunId]);

      answer();
      await callbackSeen;
      // The response is on its way back to the workflow: its callback is the step in flight.
      const [back, ...more] = await next();
      expect(more).toEqual([]);
      expect(back).toMatchObject({
        stepId: 1,
        stepName: 'slow-call',
        stepType: 'Call',
        concurrent: 1,
        callType: 'fromCallback',
        state: 'STEP_PROGRESS',
      });
      expect(back?.messageId).not.toBe(calling?.messageId);

      passBack();
      await driving;
      // The run went on to its sleep: that step is the one it is at, the call is done.
      const [sleeping, ...rest] = await next();
      expect(rest).toEqual([]);
      expect(sleeping).toEqual({
        messageId: expect.stringMatching(/^msg_/),
        state: 'STEP_PROGRESS',
        retries: 3,
        nextDeliveryTime: clock.now() + 60_000,
      });
      clock.advance(60_000);
      await drive();
      const [run] = (await client.logs({ workflowRunId })).runs;
      expect(run?.workflowState).toBe('RUN_SUCCESS');
      expect(run?.steps.some((group) => group.type === 'next')).toBe(false);
      expect(slow.requests).toHaveLength(1);
    } finally {
      answer();
      passBack();
      await slow.close();
    }
  });

  it('starts a run from a first direct call to the endpoint', async () => {
    const url = workflow<string>(
      '/wf/direct',
      async (context) => {
        const text = await context.run('upper', () => String(context.requestPayload).toUpperCase());
        return text;
      },
      { receiver: undefined },
    ); // a direct call carries no signature
    const response = await fetch(url, { method: 'POST', body: 'hello' });
    expect(response.status).toBe(200);
    const { workflowRunId } = (await response.json()) as { workflowRunId: string };
    await drive();
    const [run] = (await client.logs({ workflowRunId })).runs;
    expect(run?.workflowState).toBe('RUN_SUCCESS');
    expect(JSON.parse(run?.workflowRunResponse ?? '')).toBe('HELLO');
  });

  it('cancels a run: its waiting step is cancelled at once and never delivered', async () => {
    const url = workflow('/wf/cancel', async (context) => {
      await context.sleep('long', 3600);
      await context.run('after', () => 'never');
    });
    const { workflowRunId } = await client.trigger({ url });
    await drive();
    const [sleeping] = stepsOf((await client.logs({ workflowRunId })).runs[0]?.steps.at(-1));
    const sleepId = sleeping?.messageId ?? '';
    expect((await qstash.messages.get(sleepId)).messageId).toBe(sleepId);

    expect(await client.cancel({ ids: workflowRunId })).toEqual({ cancelled: 1 });
    // The sleep's message is gone now, not in an hour, and logged as cancelled.
    await expect(qstash.messages.get(sleepId)).rejects.toThrow(/not found/);
    const { logs } = await qstash.logs({ filter: { messageId: sleepId } });
    expect(logs.map((log) => log.state)).toContain('CANCELLED');
    const [run] = (await client.logs({ workflowRunId })).runs;
    expect(run?.workflowState).toBe('RUN_CANCELED');
    expect(run?.steps.some((group) => group.type === 'next')).toBe(false);

    const hits = server.hits.get('/wf/cancel');
    clock.advance(3_600_000);
    await drive();
    expect(server.hits.get('/wf/cancel')).toBe(hits);
  });

  it('fails a run into the workflow DLQ, calls the failure function, resumes in bulk with reuse', async () => {
    let fixed = false;
    const firstStepRuns: string[] = [];
    const failures: { runId: string; status: number; response: string }[] = [];
    const url = workflow<{ id: string }>(
      '/wf/three',
      async (context) => {
        const one = await context.run('one', () => {
          firstStepRuns.push(context.requestPayload.id);
          return `one-${context.requestPayload.id}`;
        });
        const two = await context.run('two', () => {
          if (!fixed) throw new Error('two is broken');
          return `${one}-two`;
        });
        return context.run('three', () => `${two}-three`);
      },
      {
        failureFunction: ({
          context,
          failStatus,
          failResponse,
        }: {
          context: WorkflowContext;
          failStatus: number;
          failResponse: string;
        }) => {
          failures.push({
            runId: context.workflowRunId,
            status: failStatus,
            response: failResponse,
          });
        },
      },
    );
    const a = await client.trigger({ url, body: { id: 'a' }, label: 'billing', retries: 0 });
    const b = await client.trigger({ url, body: { id: 'b' }, label: 'billing', retries: 0 });
    const other = await client.trigger({ url, body: { id: 'c' }, label: 'other', retries: 0 });
    await drive();

    expect(failures.map((f) => f.runId).sort()).toEqual(
      [a.workflowRunId, b.workflowRunId, other.workflowRunId].sort(),
    );
    expect(failures[0]).toMatchObject({ status: 500, response: 'two is broken' });
    const dlq = await client.dlq.list();
    expect(dlq.messages).toHaveLength(3);
    const entryA = dlq.messages.find((m) => m.workflowRunId === a.workflowRunId);
    expect(entryA).toMatchObject({
      workflowUrl: url,
      responseStatus: 500,
      failureCallbackInfo: { state: 'CALLBACK_SUCCESS' },
    });
    expect(typeof entryA?.workflowCreatedAt).toBe('number');
    const [failedRun] = (await client.logs({ workflowRunId: a.workflowRunId })).runs;
    expect(failedRun?.workflowState).toBe('RUN_FAILED');
    // The failure function's log has the failed step's response: its status, headers and body.
    expect(failedRun?.failureFunction).toMatchObject({
      state: 'CALLBACK_SUCCESS',
      failStatus: 500,
      failResponse: expect.stringContaining('two is broken'),
      failHeaders: { 'Content-Type': [expect.stringContaining('text/plain')] },
    });
    // The failed step is the last group, as the SDK's types have it.
    const last = failedRun?.steps[failedRun.steps.length - 1];
    expect(last).toMatchObject({
      type: 'next',
      steps: [
        {
          messageId: (entryA as { messageId?: string } | undefined)?.messageId,
          stepName: 'two',
          state: 'STEP_FAILED',
          retries: 0,
          errors: [{ status: 500, error: expect.stringMatching(/^HTTP 500/) }],
        },
      ],
    });
    const [failedStep] = (last?.steps ?? []) as { errors?: { body: string; time: number }[] }[];
    expect(failedStep?.errors?.[0]?.body).toContain('two is broken');
    expect(failedStep?.errors?.[0]?.time).toBeGreaterThan(0);

    fixed = true;
    const first = await client.dlq.resume({ filter: { label: 'billing' }, count: 1 });
    expect(first.workflowRuns).toHaveLength(1);
    expect(first.cursor).toBeTruthy();
    const second = await client.dlq.resume({
      filter: { label: 'billing' },
      count: 1,
      cursor: first.cursor,
    });
    expect(second.workflowRuns).toHaveLength(1);
    expect(second.cursor).toBeUndefined(); // "" on the wire: everything matching was processed
    await drive();

    for (const resumed of [...first.workflowRuns, ...second.workflowRuns]) {
      expect(resumed.workflowRunId).toMatch(/^wfr_/);
      const [run] = (await client.logs({ workflowRunId: resumed.workflowRunId })).runs;
      expect(run?.workflowState).toBe('RUN_SUCCESS');
      expect(JSON.parse(run?.workflowRunResponse ?? '')).toMatch(/^one-[ab]-two-three$/);
    }
    // The first step's result was reused: its side effect happened once per run.
    expect(firstStepRuns.sort()).toEqual(['a', 'b', 'c']);
    const left = await client.dlq.list();
    expect(left.messages.map((m) => m.workflowRunId)).toEqual([other.workflowRunId]);
  });

  it('resumes exactly the failed branch of a parallel group, keeping the others', async () => {
    let fixed = false;
    const ran: string[] = [];
    const url = workflow<string>('/wf/parallel-resume', async (context) => {
      const branch = (name: string, fails = false) =>
        context.run(name, () => {
          ran.push(name);
          if (fails && !fixed) throw new Error(`${name} is broken`);
          return `${name}-done`;
        });
      const results = await Promise.all([branch('a'), branch('b', true), branch('c')]);
      return await context.run('join', () => results.join('+'));
    });
    const { workflowRunId } = await client.trigger({ url, retries: 0, label: 'par' });
    await drive();
    const [failed] = (await client.logs({ workflowRunId })).runs;
    expect(failed?.workflowState).toBe('RUN_FAILED');
    expect(ran.sort()).toEqual(['a', 'b', 'c']);
    // The branches whose result reached the run before it failed (a result that comes after b's
    // failure is refused: the run has ended).
    const completed = (failed?.steps ?? [])
      .flatMap((g) => g.steps as unknown as { stepId: number; stepName: string }[])
      .filter((step) => step.stepId > 0)
      .map((step) => step.stepName);
    expect(completed).not.toContain('b');

    fixed = true;
    ran.length = 0;
    const { workflowRuns } = await client.dlq.resume({ filter: { label: 'par' } });
    expect(workflowRuns).toHaveLength(1);
    await drive();
    const [run] = (await client.logs({ workflowRunId: workflowRuns[0]?.workflowRunId })).runs;
    expect(run?.workflowState).toBe('RUN_SUCCESS');
    expect(JSON.parse(run?.workflowRunResponse ?? '')).toBe('a-done+b-done+c-done');
    // Only the failed branch ran again, and any branch whose result had not come.
    expect(ran.sort()).toEqual(['a', 'b', 'c'].filter((name) => !completed.includes(name)));
  });
  it('filters as the SDK sends them: logs by host, path and messageId, cancel by host and path, DLQ by responseStatus', async () => {
    const sleeper = (path: string) =>
      workflow(path, async (context) => {
        await context.sleep('long', 3600);
      });
    const urlA = sleeper('/wf/filters-a');
    sleeper('/wf/filters-b');
    const a = await client.trigger({ url: urlA });
    const b = await client.trigger({ url: `${server.url}/wf/filters-b` });
    await drive();
    const host = new URL(server.url).host;
    const runIds = async (filter: Parameters<Client['logs']>[0]) =>
      (await client.logs(filter)).runs.map((r) => r.workflowRunId);

    expect(await runIds({ filter: { host, path: '/wf/filters-a' } })).toEqual([a.workflowRunId]);
    const both = { path: ['/wf/filters-a', '/wf/filters-b'] };
    expect((await runIds({ filter: both })).sort()).toEqual(
      [a.workflowRunId, b.workflowRunId].sort(),
    );
    expect(await runIds({ filter: { host: 'elsewhere.example.com' } })).toEqual([]);
    // A step's message id finds its run.
    const [runA] = (await client.logs({ workflowRunId: a.workflowRunId })).runs;
    const messageId = runA?.steps[0]?.steps[0]?.messageId ?? '';
    expect(messageId).toMatch(/^msg_/);
    expect(await runIds({ filter: { messageId } })).toEqual([a.workflowRunId]);

    expect(await client.cancel({ filter: { host, path: '/wf/filters-b' } })).toEqual({
      cancelled: 1,
    });
    const states = Object.fromEntries(
      (await client.logs({ filter: both })).runs.map((r) => [r.workflowRunId, r.workflowState]),
    );
    expect(states).toEqual({
      [a.workflowRunId]: 'RUN_STARTED',
      [b.workflowRunId]: 'RUN_CANCELED',
    });
    expect(await client.cancel({ filter: { path: '/wf/filters-a' } })).toEqual({ cancelled: 1 });

    const failing = workflow('/wf/filters-fail', async (context) => {
      await context.run('fails', () => {
        throw new Error('broken');
      });
    });
    const failed = await client.trigger({ url: failing, retries: 0 });
    await drive();
    const dlqRunIds = async (responseStatus: number) =>
      (await client.dlq.list({ filter: { responseStatus } })).messages.map((m) => m.workflowRunId);
    expect(await dlqRunIds(500)).toContain(failed.workflowRunId);
    expect(await dlqRunIds(404)).toEqual([]);
    // The DLQ list takes no host or path (as QStash's refuses them).
    const refused = await t.api(`/v2/workflows/dlq?host=${host}`);
    expect(refused.status).toBe(400);
  });
});
