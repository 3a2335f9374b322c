/**
 * Events between runs with the official `@upstash/workflow` SDK against Ferry in `Upstash` mode:
 * `context.waitForEvent` holds a run until the official Client's `notify` (the run resumes with
 * the event data) or until its timeout (the run resumes with `timeout: true`); `getWaiters`
 * lists who waits (and the logs show the run at its wait); waiters are per account. Time is the manual clock; deliveries happen only
 * through `engine.runOnce()`.
 */
import type { Client as QStashClient } from '@upstash/qstash';
import { serve, type Client, type WorkflowContext } from '@upstash/workflow';
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

describe.each(STORAGES)('workflow events with the official SDK (%s)', (storage) => {
  let t: TestFerry;
  let clock: ManualClock;
  let server: WorkflowServer;
  let client: Client;
  let qstash: QStashClient;

  const drive = () => settle(t.ferry.engine);

  /** A workflow that runs one step, then waits for `eventId`, and returns what it got. */
  function waitingWorkflow(path: string, eventId: string, timeout: number | `${bigint}s`) {
    const url = `${server.url}${path}`;
    const seen = { before: 0 };
    const { handler } = serve<{ order: string }>(
      async (context: WorkflowContext<{ order: string }>) => {
        const order = await context.run('before', () => {
          seen.before++;
          return context.requestPayload.order;
        });
        const got = await context.waitForEvent<{ paid: boolean }>('wait-paid', eventId, {
          timeout,
        });
        return { order, timeout: got.timeout, eventData: got.eventData ?? null };
      },
      serveOptions(qstash, t.account, url),
    );
    server.route(path, handler);
    return { url, seen };
  }

  async function runOf(workflowRunId: string) {
    const [run] = (await client.logs({ workflowRunId })).runs;
    return run;
  }

  const setup = useUpstashWorkflows(storage);
  beforeAll(() => void ({ t, clock, server, qstash, client } = setup));

  it('a notify resumes the waiting run with the event data, once', async () => {
    const { url, seen } = waitingWorkflow('/wf/notified', 'order-1-paid', '3600s');
    const { workflowRunId } = await client.trigger({ url, body: { order: 'o-1' } });
    await drive();
    expect((await runOf(workflowRunId))?.workflowState).toBe('RUN_STARTED');

    const waiters = await client.getWaiters({ eventId: 'order-1-paid' });
    expect(waiters).toHaveLength(1);
    expect(waiters[0]?.url).toBe(url);
    expect(waiters[0]?.deadline).toBe(Math.floor((clock.now() + 3_600_000) / 1000));

    const notified = await client.notify({ eventId: 'order-1-paid', eventData: { paid: true } });
    expect(notified).toHaveLength(1);
    expect(notified[0]?.waiter.url).toBe(url);
    expect(notified[0]?.messageId).toMatch(/^msg_/);
    expect(await client.getWaiters({ eventId: 'order-1-paid' })).toEqual([]);

    await drive();
    const run = await runOf(workflowRunId);
    expect(run?.workflowState).toBe('RUN_SUCCESS');
    expect(JSON.parse(run?.workflowRunResponse ?? '')).toEqual({
      order: 'o-1',
      timeout: false,
      eventData: { paid: true },
    });
    expect(seen.before).toBe(1);
    // The logs show the wait step's `out` as text (the event data), as other steps' `out`.
    const steps = (run?.steps ?? []).flatMap((g) => g.steps as { stepName?: string }[]);
    const wait = steps.find((step) => step.stepName === 'wait-paid');
    expect(wait).toMatchObject({ stepType: 'Wait', out: '{"paid":true}', waitTimeout: false });
    expect(steps[0]).toMatchObject({ stepName: 'init', concurrent: 1 });

    // The timeout was removed with the notify: when its time comes, nothing is delivered.
    clock.advance(3_600_000);
    expect(await drive()).toBe(0);
    // A second notify finds nobody waiting.
    expect(await client.notify({ eventId: 'order-1-paid', eventData: { paid: true } })).toEqual([]);
  });

  it('a waiter not notified before its timeout resumes with timeout: true', async () => {
    const { url } = waitingWorkflow('/wf/timed-out', 'order-2-paid', 60);
    const { workflowRunId } = await client.trigger({ url, body: { order: 'o-2' } });
    await drive();
    expect(await client.getWaiters({ eventId: 'order-2-paid' })).toHaveLength(1);
    // The run is at the wait: the logs' `next` group shows its timeout, due at the deadline.
    const waiting = await runOf(workflowRunId);
    expect(waiting?.steps.at(-1)).toEqual({
      type: 'next',
      steps: [
        {
          messageId: expect.stringMatching(/^msg_/),
          stepId: 2,
          stepName: 'wait-paid',
          stepType: 'Wait',
          concurrent: 1,
          callType: 'step',
          createdAt: clock.now(),
          state: 'STEP_PROGRESS',
          retries: 3,
          nextDeliveryTime: clock.now() + 60_000,
        },
      ],
    });

    clock.advance(59_000);
    expect(await drive()).toBe(0);
    clock.advance(1_000);
    await drive();
    const run = await runOf(workflowRunId);
    expect(run?.workflowState).toBe('RUN_SUCCESS');
    expect(JSON.parse(run?.workflowRunResponse ?? '')).toEqual({
      order: 'o-2',
      timeout: true,
      eventData: null,
    });
    // The timeout took the waiter: a late notify wakes nobody.
    expect(await client.getWaiters({ eventId: 'order-2-paid' })).toEqual([]);
    expect(await client.notify({ eventId: 'order-2-paid', eventData: 'late' })).toEqual([]);
  });

  it('a notify that comes after the timeout is due but before it is delivered wins', async () => {
    const { url } = waitingWorkflow('/wf/race', 'order-3-paid', 30);
    const { workflowRunId } = await client.trigger({ url, body: { order: 'o-3' } });
    await drive();
    clock.advance(30_000); // the timeout is due now, not delivered yet
    expect(
      await client.notify({ eventId: 'order-3-paid', eventData: { paid: true } }),
    ).toHaveLength(1);
    await drive();
    const run = await runOf(workflowRunId);
    expect(JSON.parse(run?.workflowRunResponse ?? '')).toEqual({
      order: 'o-3',
      timeout: false,
      eventData: { paid: true },
    });
  });

  it("another account's notify does not wake the waiter, nor see it; a cancel removes it", async () => {
    const { url } = waitingWorkflow('/wf/isolated', 'shared-event', '600s');
    const { workflowRunId } = await client.trigger({ url, body: { order: 'o-4' } });
    await drive();
    const other = await createAccount({
      executor: t.ferry.driver.executor,
      plan: 'paid',
      now: clock.now(),
    });
    const otherClient = upstashClients({ url: t.url, token: other.token }).client;
    expect(await otherClient.getWaiters({ eventId: 'shared-event' })).toEqual([]);
    expect(await otherClient.notify({ eventId: 'shared-event', eventData: 'x' })).toEqual([]);
    await drive();
    expect((await runOf(workflowRunId))?.workflowState).toBe('RUN_STARTED');
    expect(await client.getWaiters({ eventId: 'shared-event' })).toHaveLength(1);
    // A cancelled run waits no more: its waiter goes with its timeout message.
    await client.cancel({ ids: workflowRunId });
    expect(await client.getWaiters({ eventId: 'shared-event' })).toEqual([]);
    expect(await client.notify({ eventId: 'shared-event', eventData: 'late' })).toEqual([]);
  });

  it('refuses a wait without a running run, a bad timeout, and an overlong event id', async () => {
    const body = (timeout: unknown) =>
      JSON.stringify({ url: `${server.url}/wf/x`, timeout, step: { stepId: 1 } });
    const noRun = await t.api('/v2/wait/e1', { method: 'POST', body: body('10s') });
    expect(noRun.status).toBe(400);
    expect(((await noRun.json()) as { error: string }).error).toContain('Upstash-Workflow-RunId');
    const missing = await t.api('/v2/wait/e1', {
      method: 'POST',
      headers: { 'Upstash-Workflow-RunId': 'wfr_missing' },
      body: body('10s'),
    });
    expect(missing.status).toBe(400);
    expect(((await missing.json()) as { error: string }).error).toContain('does not exist');
    const badTimeout = await t.api('/v2/wait/e1', { method: 'POST', body: body('soon') });
    expect(badTimeout.status).toBe(400);
    expect(((await badTimeout.json()) as { error: string }).error).toContain('timeout');
    const tooLong = await t.api('/v2/wait/e1', { method: 'POST', body: body('400d') });
    expect(tooLong.status).toBe(412);
    expect(((await tooLong.json()) as { error: string }).error).toContain('max_delay');
    const longId = await t.api(`/v2/notify/${'e'.repeat(257)}`, { method: 'POST', body: 'x' });
    expect(longId.status).toBe(400);
    expect(((await longId.json()) as { error: string }).error).toContain('eventId');
  });
});
