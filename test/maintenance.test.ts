/** Retention: the pruner removes old events, expired DLQ entries, expired dedup keys and ended workflow runs. */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/core/clock.js';
import { startFerry, type TestFerry } from './helpers/ferry.js';
import { startReceiver, type Receiver } from './helpers/receiver.js';

let t: TestFerry;
let clock: ManualClock;
let dest: Receiver;
const DAY = 86_400_000;

beforeEach(async () => {
  clock = new ManualClock(Date.now());
  t = await startFerry({ clock, engine: false, plan: 'free', args: ['--event-retention', '2d'] });
  dest = await startReceiver(() => ({ status: 500 }));
});
afterEach(async () => {
  await t.close();
  await dest.close();
});

describe('pruner', () => {
  it('keeps everything within retention and removes what is past it', async () => {
    await t.client.publish({ destination: `${dest.url}/x`, retries: 0, deduplicationId: 'd1' });
    await t.ferry.engine.runOnce();
    expect((await t.client.dlq.list({})).messages).toHaveLength(1);

    clock.advance(DAY);
    expect(await t.ferry.pruner.runOnce()).toEqual({
      events: 0,
      dlq: 0,
      dedup: 1,
      workflowRuns: 0,
      bodies: 0,
    });
    expect((await t.client.events.list({})).events.length).toBeGreaterThan(0);
    // The deduplication window (10 minutes) is over, so the same id publishes again.
    const again = await t.api(`/v2/publish/${dest.url}/x`, {
      method: 'POST',
      headers: { 'Svc-Deduplication-Id': 'd1', 'Svc-Delay': '5d' },
    });
    expect(again.status).toBe(200);

    clock.advance(DAY + 1); // events are now older than 2 days
    const pruned = await t.ferry.pruner.runOnce();
    // Rows: CREATED, ERROR carrying its attempt's ACTIVE (one row for both), FAILED.
    expect(pruned.events).toBeGreaterThanOrEqual(3);
    expect(pruned.dlq).toBe(0); // free plan: DLQ retention is 3 days
    // Only the newer publish's CREATED event (1 day old) is left in the log.
    const left = await t.client.events.list({});
    expect(left.events.map((e) => e.state)).toEqual(['CREATED']);

    clock.advance(DAY);
    expect((await t.ferry.pruner.runOnce()).dlq).toBe(1);
    expect((await t.client.dlq.list({})).messages).toHaveLength(0);
  });

  it('removes ended workflow runs and their history past the event retention', async () => {
    const trigger = (runId: string) =>
      t.api(`/v2/publish/${dest.url}/wf`, {
        method: 'POST',
        headers: { 'Svc-Workflow-RunId': runId, 'Svc-Workflow-Init': 'true', 'Svc-Delay': '5d' },
        body: 'payload',
      });
    expect((await trigger('wfr_ended')).status).toBe(200);
    expect((await trigger('wfr_running')).status).toBe(200);
    const cancel = await t.api('/v2/workflows/runs/wfr_ended?cancel=true', { method: 'DELETE' });
    expect(cancel.status).toBe(200);
    const runs = async () =>
      (
        (await (await t.api('/v2/workflows/logs')).json()) as { runs: { workflowRunId: string }[] }
      ).runs
        .map((r) => r.workflowRunId)
        .sort();
    expect(await runs()).toEqual(['wfr_ended', 'wfr_running']);

    clock.advance(DAY);
    expect((await t.ferry.pruner.runOnce()).workflowRuns).toBe(0);
    clock.advance(DAY + 1);
    expect((await t.ferry.pruner.runOnce()).workflowRuns).toBe(1);
    // The running run stays, whatever its age.
    expect(await runs()).toEqual(['wfr_running']);
  });
});
