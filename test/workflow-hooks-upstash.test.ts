/**
 * Notify with lookback and webhooks with the official `@upstash/workflow` SDK against Ferry in
 * `Upstash` mode. A run-scoped `client.notify({workflowRunId})` that comes before the run's
 * `waitForEvent` is kept and taken by the wait; `context.createWebhook` gives a URL under
 * `/v2/workflows/hooks/{userId}/{runId}/{eventId}` that any request (no token) answers, resuming
 * `waitForWebhook` with that request, or with `timeout: true`; only the exact URL of a running
 * run opens anything, and another account reaches nothing. Time is the manual clock; deliveries
 * happen only through `engine.runOnce()`.
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

describe.each(STORAGES)('notify lookback and webhooks with the official SDK (%s)', (storage) => {
  let t: TestFerry;
  let clock: ManualClock;
  let server: WorkflowServer;
  let client: Client;
  let qstash: QStashClient;

  const drive = () => settle(t.ferry.engine);

  function workflow<T>(path: string, fn: (context: WorkflowContext<T>) => Promise<unknown>) {
    const url = `${server.url}${path}`;
    server.route(path, serve<T>(fn, serveOptions(qstash, t.account, url)).handler);
    return url;
  }

  async function resultOf(workflowRunId: string): Promise<unknown> {
    const [run] = (await client.logs({ workflowRunId })).runs;
    expect(run?.workflowState).toBe('RUN_SUCCESS');
    return JSON.parse(run?.workflowRunResponse ?? '');
  }

  const setup = useUpstashWorkflows(storage);
  beforeAll(() => void ({ t, clock, server, qstash, client } = setup));

  it('a run-scoped notify before the wait is kept for it; a broadcast one is not', async () => {
    const url = workflow<string>('/wf/lookback', async (context) => {
      await context.sleep('hold', 60);
      const kept = await context.waitForEvent<{ paid: boolean }>('wait-kept', 'paid', {
        timeout: 30,
      });
      const lost = await context.waitForEvent('wait-lost', 'shipped', { timeout: 30 });
      return { kept, lost };
    });
    const { workflowRunId } = await client.trigger({ url });
    await drive();
    // Before the run waits: the run-scoped notify is kept, the broadcast one wakes nobody.
    expect(
      await client.notify({ eventId: 'paid', eventData: { paid: true }, workflowRunId }),
    ).toEqual([]);
    expect(await client.notify({ eventId: 'shipped', eventData: 'early' })).toEqual([]);
    // Another account cannot notify (nor keep an event for) this run.
    const other = await createAccount({
      executor: t.ferry.driver.executor,
      plan: 'paid',
      now: clock.now(),
    });
    const otherClient = upstashClients({ url: t.url, token: other.token }).client;
    await expect(
      otherClient.notify({ eventId: 'paid', eventData: { paid: false }, workflowRunId }),
    ).rejects.toThrow(/not running/);

    clock.advance(60_000);
    await drive();
    expect(await client.getWaiters({ eventId: 'paid' })).toEqual([]);
    expect(await client.getWaiters({ eventId: 'shipped' })).toHaveLength(1);
    clock.advance(30_000);
    await drive();
    expect(await resultOf(workflowRunId)).toEqual({
      kept: { eventData: { paid: true }, timeout: false },
      lost: { timeout: true },
    });
    // A run that is not running answers 404.
    await expect(client.notify({ eventId: 'paid', eventData: 1, workflowRunId })).rejects.toThrow(
      /not running/,
    );
  });

  it('a run-scoped notify wakes the run when it already waits', async () => {
    const url = workflow<string>('/wf/waiting', async (context) => {
      const got = await context.waitForEvent('wait', 'go', { timeout: 600 });
      return got;
    });
    const { workflowRunId } = await client.trigger({ url });
    await drive();
    const woke = await client.notify({ eventId: 'go', eventData: 'now', workflowRunId });
    expect(woke).toHaveLength(1);
    expect(woke[0]?.waiter.url).toBe(url);
    await drive();
    expect(await resultOf(workflowRunId)).toEqual({ eventData: 'now', timeout: false });
  });

  it('a request to the webhook URL, any method and no token, resumes waitForWebhook', async () => {
    const hooks: string[] = [];
    const url = workflow<string>('/wf/hook', async (context) => {
      const webhook = await context.createWebhook('make-hook');
      await context.run('publish-hook', () => {
        hooks.push(webhook.webhookUrl);
      });
      const got = await context.waitForWebhook('wait-hook', webhook, '1h');
      return await context.run('read', async () => ({
        timeout: got.timeout,
        method: got.request?.method,
        url: got.request?.url,
        signature: got.request?.headers.get('x-signature'),
        body: await got.request?.text(),
      }));
    });
    const { workflowRunId } = await client.trigger({ url });
    await drive();
    const hook = hooks.at(-1) ?? '';
    expect(hook).toMatch(
      new RegExp(`^${t.url}/v2/workflows/hooks/${t.account.id}/${workflowRunId}/evt_[\\w-]{15}$`),
    );
    // Only the exact URL of the run opens it: another event id, run or account is 404.
    const eventId = hook.split('/').at(-1) ?? '';
    for (const wrong of [
      hook.replace(eventId, 'evt_guessedguessed1'),
      hook.replace(workflowRunId, 'wfr_guessed'),
      hook.replace(`/hooks/${t.account.id}/`, '/hooks/someone-else/'),
    ]) {
      const res = await fetch(wrong, { method: 'POST', body: 'x' });
      expect(res.status).toBe(404);
      expect(((await res.json()) as { error: string }).error).toContain('webhook');
    }
    const res = await fetch(`${hook}?source=shop`, {
      method: 'PUT',
      headers: { 'x-signature': 'sig-1', 'content-type': 'text/plain' },
      body: 'order paid',
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { messageId: string }).messageId).toMatch(/^msg_/);
    await drive();
    expect(await resultOf(workflowRunId)).toEqual({
      timeout: false,
      method: 'PUT',
      url: expect.stringContaining(
        `/v2/workflows/hooks/${t.account.id}/${workflowRunId}/${eventId}?source=shop`,
      ),
      signature: 'sig-1',
      body: 'order paid',
    });
    // The run has ended: its webhook answers 404.
    expect((await fetch(hook, { method: 'POST' })).status).toBe(404);
  });

  it('a webhook request before the wait is kept; a wait nobody calls times out', async () => {
    const hooks: string[] = [];
    const url = workflow<string>('/wf/hook-early', async (context) => {
      const first = await context.createWebhook('hook-1');
      const second = await context.createWebhook('hook-2');
      await context.run('publish-hooks', () => {
        hooks.push(first.webhookUrl, second.webhookUrl);
      });
      await context.sleep('hold', 60);
      const early = await context.waitForWebhook('wait-1', first, '60s');
      const never = await context.waitForWebhook('wait-2', second, '60s');
      return await context.run('read', async () => ({
        early: {
          timeout: early.timeout,
          method: early.request?.method,
          body: await early.request?.text(),
        },
        never: { timeout: never.timeout, request: never.request ?? null },
      }));
    });
    const { workflowRunId } = await client.trigger({ url });
    await drive();
    const res = await fetch(hooks[0] ?? '', { method: 'POST', body: 'early bird' });
    expect(res.status).toBe(202);
    clock.advance(60_000);
    await drive();
    clock.advance(60_000);
    await drive();
    expect(await resultOf(workflowRunId)).toEqual({
      early: { timeout: false, method: 'POST', body: 'early bird' },
      never: { timeout: true, request: null },
    });
  });
});
