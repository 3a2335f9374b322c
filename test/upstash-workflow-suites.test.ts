/**
 * What the workflow SDKs' own test suites expect of Ferry in `Upstash` mode (issue 22): a step
 * of a run that was cancelled meanwhile ends the invocation quietly ("workflow-was-finished",
 * from the 400 of `/v2/batch`), also for parallel steps; hop-by-hop headers forwarded to a
 * callback or failure callback are dropped, not refused, on every route, so the workflow support
 * of `@upstash/qstash` (which forwards every header its endpoint got) completes a `context.call`.
 */
import type { Client as QStashClient } from '@upstash/qstash';
import { serve as qstashServe } from '@upstash/qstash/workflow';
import { serve, WorkflowMiddleware, type Client, type WorkflowContext } from '@upstash/workflow';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/core/clock.js';
import { STORAGES, startFerry, type TestFerry } from './helpers/ferry.js';
import { startReceiver, type Receiver } from './helpers/receiver.js';
import {
  serveOptions,
  settle,
  startWorkflowServer,
  upstashClients,
  type WorkflowServer,
} from './helpers/workflow-server.js';

/** The hop-by-hop headers a forwarding endpoint passes on, with a header that must arrive. */
function forwards(kind: 'Callback' | 'Failure-Callback'): Record<string, string> {
  const p = `Upstash-${kind}-Forward-`;
  return {
    [`${p}Connection`]: 'keep-alive',
    [`${p}Host`]: 'bogus.example',
    [`${p}Content-Length`]: '999',
    [`${p}Transfer-Encoding`]: 'chunked',
    [`${p}X-Kept`]: kind,
  };
}

describe.each(STORAGES)('what the workflow SDK suites expect (%s)', (storage) => {
  let t: TestFerry;
  let server: WorkflowServer;
  let third: Receiver;
  let hooks: Receiver;
  let client: Client;
  let qstash: QStashClient;
  /** The SDK's warnings by run: how it reports "workflow-was-finished" (a step refused by 400). */
  const warnings = new Map<string, string[]>();
  const recorder = new WorkflowMiddleware({
    name: 'record-warnings',
    callbacks: {
      onWarning: ({ workflowRunId = '', warning }) => {
        warnings.set(workflowRunId, [...(warnings.get(workflowRunId) ?? []), warning]);
      },
    },
  });

  const drive = () => settle(t.ferry.engine);

  function workflow(path: string, fn: (context: WorkflowContext) => Promise<unknown>): string {
    const url = `${server.url}${path}`;
    const options = { ...serveOptions(qstash, t.account, url), middlewares: [recorder] };
    return server.route(path, serve(fn, options).handler);
  }

  beforeAll(async () => {
    const clock = new ManualClock(Date.now());
    t = await startFerry({ storage, clock, engine: false, args: ['--header-prefix', 'Upstash'] });
    server = await startWorkflowServer();
    third = await startReceiver(() => ({ status: 200, body: '{"third":true}' }));
    hooks = await startReceiver(() => ({ status: 200 }));
    ({ qstash, client } = upstashClients(t));
  });
  afterAll(async () => {
    await t.close();
    await server.close();
    await third.close();
    await hooks.close();
  });

  it.each([
    ['one step', (context: WorkflowContext) => context.sleep('sleeping', 10)],
    [
      'parallel steps',
      (context: WorkflowContext) =>
        Promise.all([context.sleep('sleeping', 10), context.sleep('sleeping', 10)]),
    ],
  ])('a step (%s) of a run cancelled meanwhile: workflow-was-finished', async (name, step) => {
    const path = `/wf/cancelled-${name.replace(' ', '-')}`;
    const url = workflow(path, async (context) => {
      // Cancelled from outside while this invocation runs: its step publish must be refused.
      await client.cancel({ ids: context.workflowRunId });
      await step(context);
    });
    const { workflowRunId } = await client.trigger({ url });
    await drive();
    // The SDK's "workflow-was-finished" branch: it stops quietly instead of failing the step.
    expect(warnings.get(workflowRunId)).toEqual([
      expect.stringMatching(
        /^Tried to append to a cancelled workflow\. Exiting without publishing/,
      ),
    ]);
    expect(server.hits.get(path)).toBe(1);
    const [run] = (await client.logs({ workflowRunId })).runs;
    expect(run?.workflowState).toBe('RUN_CANCELED');
  });

  it('@upstash/qstash/workflow completes a context.call: forwarded hop-by-hop headers are dropped', async () => {
    const path = '/wf/qstash-call';
    const url = `${server.url}${path}`;
    const steps: { runId: string; condition: string }[] = [];
    const callResults: unknown[] = [];
    const handler = qstashServe<{ n: number }>(
      async (context) => {
        const got = await context.call<string>('call-third', `${third.url}/x`, 'POST', {
          n: context.requestPayload.n,
        });
        await context.run('after', () => callResults.push(got));
      },
      {
        ...serveOptions(qstash, t.account, url),
        onStepFinish: (runId, condition) => {
          steps.push({ runId, condition });
          return new Response(JSON.stringify({ workflowRunId: runId }), { status: 200 });
        },
      },
    );
    server.route(path, handler);
    // Unsigned by the endpoint's trigger: a first call starts the run, which forwards the
    // endpoint's own request headers (Host, Connection, Content-Length…) on every step.
    await qstash.publishJSON({ url, body: { n: 1 } });
    await drive();
    expect(third.requests).toHaveLength(1);
    expect(steps.at(-1)?.condition).toBe('success');
    const runId = steps.at(-1)?.runId ?? '';
    const [run] = (await client.logs({ workflowRunId: runId })).runs;
    expect(run?.workflowState).toBe('RUN_SUCCESS');
    expect(callResults).toEqual([{ third: true }]);
  });

  describe('callback forwards of hop-by-hop headers are dropped on every route', () => {
    const withHooks = () => ({
      'Upstash-Callback': `${hooks.url}/callback`,
      'Upstash-Failure-Callback': `${hooks.url}/failure`,
      ...forwards('Callback'),
      ...forwards('Failure-Callback'),
    });

    it('publish and batch: accepted, and the callback gets the other forwarded headers', async () => {
      const published = await t.api(`/v2/publish/${third.url}/cb`, {
        method: 'POST',
        headers: withHooks(),
        body: 'x',
      });
      expect(published.status).toBe(200);
      const batch = await t.api('/v2/batch', {
        method: 'POST',
        body: JSON.stringify([{ destination: `${third.url}/cb-batch`, headers: withHooks() }]),
      });
      expect(batch.status).toBe(200);
      expect(await batch.json()).toEqual([
        { messageId: expect.stringMatching(/^msg_/), deduplicated: false },
      ]);
      await drive();
      const callbacks = (await hooks.waitFor(2)).filter((r) => r.path === '/callback');
      expect(callbacks).toHaveLength(2);
      for (const request of callbacks) {
        expect(request.headers['x-kept']).toBe('Callback');
        expect(request.headers.host).not.toBe('bogus.example');
      }
    });

    it('schedules and URL-group default headers accept them too', async () => {
      const schedule = await t.api(`/v2/schedules/${third.url}/cron`, {
        method: 'POST',
        headers: { ...withHooks(), 'Upstash-Cron': '0 * * * *' },
      });
      expect(schedule.status).toBe(200);
      await t.api('/v2/topics/hop-group/endpoints', {
        method: 'POST',
        body: JSON.stringify({ endpoints: [{ url: `${third.url}/g` }] }),
      });
      const patched = await t.api('/v2/topics/hop-group', {
        method: 'PATCH',
        body: JSON.stringify({ headers: withHooks() }),
      });
      expect(patched.status).toBe(200);
      const toGroup = await t.api('/v2/publish/hop-group', { method: 'POST', body: 'g' });
      expect(toGroup.status).toBe(200);
    });
  });
});
