/**
 * What the official SDKs' own test suites expect of Ferry in `Upstash` mode (issue 22), through
 * `@upstash/qstash` and raw HTTP: a batch with an invalid entry fails as a whole and stores
 * nothing; the last page of a list or bulk call has no `cursor` field (only the workflow DLQ
 * resume keeps `""`); ending a workflow run that has ended already succeeds and changes nothing.
 * And what the SDK sends: the events-log filters of `client.logs`, and the `count=100` of a bulk
 * cancel, which the server ignores (every match is cancelled).
 */
import { Client, QstashError } from '@upstash/qstash';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CANCEL_CHUNK } from '../src/api/routes/messages.js';
import { createAccount } from '../src/cli/credentials.js';
import { ManualClock } from '../src/core/clock.js';
import { STORAGES, startFerry, type TestFerry } from './helpers/ferry.js';
import { planArgs } from './helpers/limits.js';
import { replacing, wrapTransactions } from './helpers/wrap-driver.js';
import { startReceiver, type Receiver } from './helpers/receiver.js';

describe.each(STORAGES)('what the official SDK suites expect (%s)', (storage) => {
  let t: TestFerry;
  let dest: Receiver;
  let client: Client;
  let clock: ManualClock;
  const deletedPerTransaction: number[] = [];

  const json = async (path: string, init?: RequestInit) => {
    const res = await t.api(path, init);
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  const batch = (entries: unknown[]) =>
    t.api('/v2/batch', { method: 'POST', body: JSON.stringify(entries) });
  /** Every event of messages to `path` on the receiver (the engine is off: CREATED ones). */
  const eventsTo = async (path: string) =>
    (await client.logs({ filter: { url: `${dest.url}${path}` } })).logs;

  beforeAll(async () => {
    clock = new ManualClock(Date.now());
    t = await startFerry({
      storage,
      clock,
      engine: false,
      args: ['--header-prefix', 'Upstash', ...planArgs({ paid: { max_queues: 2 } })],
      // Records how many messages each transaction's bulk cancel removed.
      wrapDriver: (driver) =>
        wrapTransactions(driver, (run) =>
          run((tx) =>
            replacing(tx, 'messageDeleteMany', (original) => async (params) => {
              const deleted = await original(params);
              deletedPerTransaction.push(deleted.length);
              return deleted;
            }),
          ),
        ),
    });
    dest = await startReceiver((req) => ({ status: req.path.startsWith('/broken') ? 500 : 200 }));
    client = new Client({ baseUrl: t.url, token: t.token, enableTelemetry: false, retry: false });
  });
  afterAll(async () => {
    await t.close();
    await dest.close();
  });

  describe('POST /v2/batch: all or nothing', () => {
    it('an invalid entry makes the batch a 400 naming it; nothing is stored, no queue made', async () => {
      const res = await batch([
        { destination: `${dest.url}/batch-a`, body: 'a', queue: 'batch-q' },
        { destination: `${dest.url}/batch-b`, headers: { 'Upstash-Retries': 'many' } },
        { destination: 'ftp://nope' },
      ]);
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: string }).error).toMatch(
        /^entry 1: invalid Upstash-Retries "many"/,
      );
      expect(await eventsTo('/batch-a')).toEqual([]);
      expect((await t.api('/v2/queues/batch-q')).status).toBe(404);

      // The official client throws the 400 (the workflow SDK reads it as "the run has ended").
      const error: unknown = await client
        .batch([{ url: `${dest.url}/batch-a` }, { url: 'ftp://nope' }])
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(QstashError);
      expect(error).toMatchObject({ status: 400 });
      expect(await eventsTo('/batch-a')).toEqual([]);
    });

    it('a step of an ended workflow run fails the batch; a valid batch answers one result each', async () => {
      const runId = `wfr_batch_${storage}`;
      const workflow = { 'Upstash-Workflow-RunId': runId };
      const trigger = await batch([
        {
          destination: `${dest.url}/wf`,
          headers: { ...workflow, 'Upstash-Workflow-Init': 'true', 'Upstash-Delay': '1h' },
        },
        { destination: `${dest.url}/batch-ok`, queue: 'batch-q' },
      ]);
      expect(trigger.status).toBe(200);
      const results = (await trigger.json()) as { messageId: string; deduplicated: boolean }[];
      expect(results).toEqual([
        { messageId: expect.stringMatching(/^msg_/), deduplicated: false },
        { messageId: expect.stringMatching(/^msg_/), deduplicated: false },
      ]);
      expect((await t.api('/v2/queues/batch-q')).status).toBe(200);

      const cancel = await t.api(`/v2/workflows/runs?workflowRunIds=${runId}`, {
        method: 'DELETE',
      });
      expect(await cancel.json()).toEqual({ cancelled: 1 });
      const step = {
        destination: `${dest.url}/wf`,
        headers: { ...workflow, 'Upstash-Workflow-CallType': 'step', 'Upstash-Delay': '10s' },
        body: '{"stepId":1}',
      };
      const res = await batch([{ destination: `${dest.url}/batch-c` }, step, step]);
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: string }).error).toBe(
        `entry 1: workflow run "${runId}" has ended (RUN_CANCELED): cannot append a step`,
      );
      expect(await eventsTo('/batch-c')).toEqual([]);
    });

    it('max_queues is checked up front: 412 naming the entry of the queue too many', async () => {
      // batch-q exists (previous test); the plan allows 2 queues.
      const res = await batch([
        { destination: `${dest.url}/batch-d`, queue: 'batch-q2' },
        { destination: `${dest.url}/batch-d`, queue: 'batch-q2' },
        { destination: `${dest.url}/batch-d`, queue: 'batch-q3' },
      ]);
      expect(res.status).toBe(412);
      expect(((await res.json()) as { error: string }).error).toBe(
        'entry 2: queue "batch-q3" would be more than max_queues (2)',
      );
      expect((await t.api('/v2/queues/batch-q2')).status).toBe(404);
      expect(await eventsTo('/batch-d')).toEqual([]);
    });
  });

  describe('GET /v2/events: the filters client.logs sends', () => {
    const ids = (logs: { messageId: string }[]) =>
      [...new Set(logs.map((l) => l.messageId))].sort();

    it('messageIds (repeated), flowControlKey and callerIp select the matching events', async () => {
      const key = `logs-key-${storage}`;
      const a = await client.publish({
        url: `${dest.url}/logs-a`,
        body: 'a',
        delay: 3600,
        flowControl: { key, parallelism: 1 },
      });
      const b = await client.publish({ url: `${dest.url}/logs-b`, body: 'b', delay: 3600 });
      const c = await client.publish({ url: `${dest.url}/logs-c`, body: 'c', delay: 3600 });

      const byIds = await client.logs({ messageIds: [a.messageId, b.messageId] });
      expect(ids(byIds.logs)).toEqual([a.messageId, b.messageId].sort());
      const byKey = await client.logs({ filter: { flowControlKey: key } });
      expect(ids(byKey.logs)).toEqual([a.messageId]);

      // Published over loopback: the caller's address is the one the API saw.
      const { body } = await json(`/v2/events?messageId=${c.messageId}`);
      const callerIp = (body.events as { callerIP: string }[])[0]?.callerIP ?? '';
      expect(callerIp).not.toBe('');
      const byIp = await client.logs({ filter: { callerIp, url: `${dest.url}/logs-c` } });
      expect(ids(byIp.logs)).toEqual([c.messageId]);
      expect((await client.logs({ filter: { callerIp: '192.0.2.1' } })).logs).toEqual([]);
      const spelled = await json(
        `/v2/logs?callerIP=${encodeURIComponent(callerIp)}&messageIds=${b.messageId}`,
      );
      expect(ids(spelled.body.logs as { messageId: string }[])).toEqual([b.messageId]);
    });
  });

  describe('DELETE /v2/messages: count is ignored, every match is cancelled', () => {
    it('cancel({ filter }) and deleteAll() (count=100 sent) cancel every match, in chunks', async () => {
      const { token } = await createAccount({
        executor: t.ferry.driver.executor,
        plan: 'paid',
        now: clock.now(),
        secrets: t.ferry.secrets,
      });
      const sdk = new Client({ baseUrl: t.url, token, enableTelemetry: false, retry: false });
      const publish = (label: string, n: number) =>
        sdk.batch(
          Array.from({ length: n }, (_, i) => ({
            url: `${dest.url}/bulk`,
            body: String(i),
            delay: 3600,
            label,
          })),
        );
      // More than one transaction's worth (CANCEL_CHUNK) under one label.
      await publish('bulk', 1000);
      await publish('bulk', CANCEL_CHUNK + 1 - 1000);
      await publish('keep', 2);
      const mine = await client.publish({ url: `${dest.url}/bulk`, body: 'mine', delay: 3600 });
      deletedPerTransaction.length = 0;

      expect(await sdk.messages.cancel({ filter: { label: 'bulk' } })).toEqual({
        cancelled: CANCEL_CHUNK + 1,
      });
      expect(Math.max(...deletedPerTransaction)).toBe(CANCEL_CHUNK);
      expect(await sdk.messages.deleteAll()).toBe(2);
      expect(await sdk.messages.cancel({ all: true, count: 1 })).toEqual({ cancelled: 0 });
      // Another account's message is untouched.
      expect((await client.messages.get(mine.messageId)).messageId).toBe(mine.messageId);
    });
  });

  describe('cursor: absent on the last page', () => {
    beforeAll(async () => {
      for (const n of [1, 2]) await client.publish({ url: `${dest.url}/paged`, body: `p${n}` });
      await client.publish({ url: `${dest.url}/broken`, body: 'x', retries: 0 });
      await client.publish({ url: `${dest.url}/broken`, body: 'y', retries: 0 });
      while ((await t.ferry.engine.runOnce()) > 0);
    });

    it('GET /v2/events and /v2/logs: a cursor while pages remain, no field on the last', async () => {
      const filter = { url: `${dest.url}/paged`, state: 'CREATED' as const };
      const first = await client.logs({ filter, count: 1 });
      expect(first.logs).toHaveLength(1);
      expect(first.cursor).toBeTruthy();
      const last = await client.logs({ filter, count: 1, cursor: first.cursor });
      expect(last.logs).toHaveLength(1);
      expect(last.cursor).toBeUndefined();
      for (const path of ['/v2/events', '/v2/logs']) {
        const { body } = await json(`${path}?url=${encodeURIComponent(`${dest.url}/paged`)}`);
        expect(body).not.toHaveProperty('cursor');
      }
    });

    it('GET /v2/dlq, filtered DELETE /v2/dlq and POST /v2/dlq/retry', async () => {
      const first = await client.dlq.listMessages({ count: 1 });
      expect(first.cursor).toBeTruthy();
      const last = await client.dlq.listMessages({ count: 1, cursor: first.cursor });
      expect(last.messages).toHaveLength(1);
      expect(last.cursor).toBeUndefined();

      const retried = await json(`/v2/dlq/retry?dlqIds=${first.messages[0]?.dlqId}`, {
        method: 'POST',
      });
      expect(retried.status).toBe(201);
      expect(retried.body).not.toHaveProperty('cursor');
      const deleted = await client.dlq.delete({ filter: { url: `${dest.url}/broken` } });
      expect(deleted.deleted).toBeGreaterThan(0);
      expect(deleted).not.toHaveProperty('cursor');
    });

    it('the workflow lists and DLQ delete omit it; the DLQ resume keeps "" (endpoint 6)', async () => {
      expect((await json('/v2/workflows/logs')).body).not.toHaveProperty('cursor');
      expect((await json('/v2/workflows/events')).body).not.toHaveProperty('cursor');
      expect((await json('/v2/workflows/dlq')).body).not.toHaveProperty('cursor');
      expect((await json('/v2/dlq?source=workflow')).body).not.toHaveProperty('cursor');
      const none = 'workflowRunId=wfr_none';
      const deleted = await json(`/v2/workflows/dlq?${none}`, { method: 'DELETE' });
      expect(deleted.body).toEqual({ deleted: 0 });
      for (const kind of ['resume', 'restart']) {
        const resumed = await json(`/v2/workflows/dlq/${kind}?${none}`, { method: 'POST' });
        expect(resumed.body).toEqual({ workflowRuns: [], cursor: '' });
      }
    });
  });

  /** Starts a run whose first step waits an hour; returns that step's message id. */
  async function startWaitingRun(runId: string): Promise<string> {
    const trigger = await t.api(`/v2/publish/${dest.url}/${runId}`, {
      method: 'POST',
      headers: {
        'Upstash-Workflow-RunId': runId,
        'Upstash-Workflow-Init': 'true',
        'Upstash-Delay': '1h',
      },
    });
    expect(trigger.status).toBe(200);
    return ((await trigger.json()) as { messageId: string }).messageId;
  }

  it('ending a workflow run that has ended answers 200 and leaves it as it was', async () => {
    const runId = `wfr_twice_${storage}`;
    await startWaitingRun(runId);
    const end = (query: string, body: string) =>
      t.api(`/v2/workflows/runs/${runId}?${query}`, { method: 'DELETE', body });
    expect((await end('cancel=false', '"done"')).status).toBe(200);
    // As the SDK sends it when a run was started twice with one id.
    const again = await end('cancel=false', 'null');
    expect(again.status).toBe(200);
    expect((await end('cancel=true', 'null')).status).toBe(200);
    const { runs } = (await json(`/v2/workflows/logs?workflowRunId=${runId}`)).body as {
      runs: { workflowState: string; workflowRunResponse?: string }[];
    };
    expect(runs).toMatchObject([{ workflowState: 'RUN_SUCCESS', workflowRunResponse: '"done"' }]);
    const unknown = await t.api('/v2/workflows/runs/wfr_unknown?cancel=false', {
      method: 'DELETE',
    });
    expect(unknown.status).toBe(404);
  });

  it('DELETE of a run without `cancel` cancels it, as the REST API documents', async () => {
    const runId = `wfr_plain_cancel_${storage}`;
    const messageId = await startWaitingRun(runId);
    const res = await t.api(`/v2/workflows/runs/${runId}`, { method: 'DELETE' });
    expect(res.status).toBe(200);
    const { runs } = (await json(`/v2/workflows/logs?workflowRunId=${runId}`)).body as {
      runs: { workflowState: string }[];
    };
    expect(runs).toMatchObject([{ workflowState: 'RUN_CANCELED' }]);
    // Its delayed first step is cancelled with it.
    expect((await t.api(`/v2/messages/${messageId}`)).status).toBe(404);
  });
});
