/**
 * Flow control of workflow runs with the official `@upstash/workflow` SDK against Ferry in
 * `Upstash` mode: the trigger's flow-control key covers every step of the run, so runs sharing a
 * key share its parallelism and its rate across all their steps. Time is the manual clock;
 * deliveries happen only through `engine.runOnce()`.
 */
import type { Client as QStashClient } from '@upstash/qstash';
import { serve, type Client } from '@upstash/workflow';
import { beforeAll, describe, expect, it } from 'vitest';
import type { ManualClock } from '../src/core/clock.js';
import { STORAGES, type TestFerry } from './helpers/ferry.js';
import {
  serveOptions,
  settle,
  useUpstashWorkflows,
  type WorkflowServer,
} from './helpers/workflow-server.js';

describe.each(STORAGES)('flow control of workflow runs (%s)', (storage) => {
  let t: TestFerry;
  let clock: ManualClock;
  let server: WorkflowServer;
  let client: Client;
  let qstash: QStashClient;

  const drive = () => settle(t.ferry.engine);

  /** A three-step workflow at `path`; counts calls and the most calls in flight at once. */
  function workflow(path: string) {
    const url = `${server.url}${path}`;
    const seen = { calls: 0, inFlight: 0, maxInFlight: 0 };
    const { handler } = serve<string>(
      async (context) => {
        const one = await context.run('one', () => `${context.requestPayload}-1`);
        const two = await context.run('two', () => `${one}-2`);
        return await context.run('three', () => `${two}-3`);
      },
      serveOptions(qstash, t.account, url),
    );
    server.route(path, async (request) => {
      seen.calls++;
      seen.inFlight++;
      seen.maxInFlight = Math.max(seen.maxInFlight, seen.inFlight);
      try {
        // Hold the call a moment so that overlapping deliveries would show.
        await new Promise((resolve) => setImmediate(resolve));
        return await handler(request);
      } finally {
        seen.inFlight--;
      }
    });
    return { url, seen };
  }

  async function states(ids: string[]) {
    return Promise.all(
      ids.map(async (id) => (await client.logs({ workflowRunId: id })).runs[0]?.workflowState),
    );
  }

  const setup = useUpstashWorkflows(storage);
  beforeAll(() => void ({ t, clock, server, qstash, client } = setup));

  it('parallelism 1 holds across every step of runs sharing a key', async () => {
    const { url, seen } = workflow('/wf/fc-parallel');
    const runs = await Promise.all(
      ['a', 'b', 'c', 'd'].map((body) =>
        client.trigger({ url, body, flowControl: { key: 'wf-par', parallelism: 1 } }),
      ),
    );
    await drive();
    const ids = runs.map((r) => r.workflowRunId);
    expect(await states(ids)).toEqual(ids.map(() => 'RUN_SUCCESS'));
    expect(seen.calls).toBeGreaterThanOrEqual(4 * 4); // four deliveries per run at least
    expect(seen.maxInFlight).toBe(1);
    const logs = (await (await t.api(`/v2/workflows/logs?workflowRunId=${ids[0]}`)).json()) as {
      runs: { flowControlKey?: string }[];
    };
    expect(logs.runs[0]?.flowControlKey).toBe('wf-par');
  });

  it('a rate holds across every step of runs sharing a key', async () => {
    const { url, seen } = workflow('/wf/fc-rate');
    const runs = await Promise.all(
      ['a', 'b'].map((body) =>
        client.trigger({ url, body, flowControl: { key: 'wf-rate', rate: 3, period: '1m' } }),
      ),
    );
    const ids = runs.map((r) => r.workflowRunId);
    // Each minute lets three calls through, whichever run's step they are.
    for (let minute = 1; minute <= 2; minute++) {
      await drive();
      expect(seen.calls).toBe(3 * minute);
      clock.advance(60_000);
    }
    for (let minute = 0; minute < 5; minute++) {
      await drive();
      clock.advance(60_000);
    }
    expect(await states(ids)).toEqual(['RUN_SUCCESS', 'RUN_SUCCESS']);
  });
});
