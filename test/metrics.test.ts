/**
 * `GET /metrics` as an operator scrapes it: before and after real traffic (publishes, a batch, a
 * schedule, a callback, a workflow message, flow control, deliveries that succeed, retry, fail
 * and refuse retries, against a real receiver), the series move by exactly what was done. The
 * engine and scheduler are driven with `runOnce()` on a manual clock, so lateness is exact.
 */
import { readFileSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/core/clock.js';
import { startFerry, STORAGES, type TestFerry } from './helpers/ferry.js';
import { startReceiver, type Receiver } from './helpers/receiver.js';

const START = Date.UTC(2026, 0, 1, 0, 0, 0);

/** The value of one series line (`name{labels}`) of a scrape; 0 when absent. */
function valueOf(text: string, series: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
}

async function scrape(url: string, headers: Record<string, string> = {}): Promise<string> {
  const res = await fetch(`${url}/metrics`, { headers });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return res.text();
}

const EXACT = [
  'ferry_messages_published_total{kind="publish"}',
  'ferry_messages_published_total{kind="batch"}',
  'ferry_messages_published_total{kind="schedule"}',
  'ferry_messages_published_total{kind="callback"}',
  'ferry_messages_published_total{kind="workflow"}',
  'ferry_delivery_attempts_total{outcome="delivered"}',
  'ferry_delivery_attempts_total{outcome="retried"}',
  'ferry_delivery_attempts_total{outcome="failed"}',
  'ferry_delivery_attempts_total{outcome="non_retryable"}',
  'ferry_dlq_moves_total',
  'ferry_publish_ack_seconds_count',
  'ferry_delivery_attempt_duration_seconds_count',
  'ferry_first_attempt_lateness_seconds_count',
  'ferry_claim_batch_size_count',
  'ferry_claim_batch_size_sum',
  'ferry_schedule_lateness_seconds_count',
  'ferry_schedule_lateness_seconds_sum',
  'ferry_messages{state="due"}',
  'ferry_messages{state="delayed"}',
  'ferry_messages{state="waiting"}',
  'ferry_messages{state="in_flight"}',
  'ferry_dlq_messages',
];

describe.each(STORAGES)('/metrics on %s', (storage) => {
  let t: TestFerry;
  let clock: ManualClock;
  let dest: Receiver;

  beforeEach(async () => {
    clock = new ManualClock(START);
    t = await startFerry({ clock, engine: false, storage });
    dest = await startReceiver((req) => {
      if (req.path.startsWith('/fail')) return { status: 500 };
      if (req.path.startsWith('/refuse')) {
        return { status: 489, headers: { 'Svc-NonRetryable-Error': 'true' } };
      }
      return { status: 200 };
    });
  });
  afterEach(async () => {
    await t.close();
    await dest.close();
  });

  const publish = async (path: string, headers: Record<string, string> = {}) => {
    const res = await t.api(`/v2/publish/${dest.url}${path}`, {
      method: 'POST',
      headers,
      body: 'x',
    });
    expect(res.status).toBe(200);
  };

  it('moves every series by exactly what the traffic did', async () => {
    // The gauges are sampled at most every 5 s of the (manual) clock.
    const before = await scrape(t.url);
    const schedule = await t.api(`/v2/schedules/${dest.url}/tick`, {
      method: 'POST',
      headers: { 'Svc-Cron': '* * * * *' },
    });
    expect(schedule.status).toBe(200);
    clock.advance(62_000); // the tick at START + 60 s fires 2 s late
    expect(await t.ferry.scheduler.runOnce()).toBe(1);

    await publish('/ok');
    await publish('/ok');
    await publish('/fail', { 'Svc-Retries': '0' });
    await publish('/fail', { 'Svc-Retries': '1', 'Svc-Retry-Delay': '3600000' });
    await publish('/refuse', { 'Svc-Retries': '3' });
    await publish('/ok', { 'Svc-Callback': `${dest.url}/callback` });
    const keyed = { 'Svc-Flow-Control-Key': 'k', 'Svc-Flow-Control-Value': 'parallelism=1' };
    await publish('/ok', keyed);
    await publish('/ok', keyed);
    await publish('/wf', {
      'Svc-Workflow-RunId': 'wfr_metrics',
      'Svc-Workflow-Init': 'true',
      'Svc-Delay': '1h',
    });
    const batch = await t.api('/v2/batch', {
      method: 'POST',
      body: JSON.stringify([
        { destination: `${dest.url}/later`, headers: { 'Svc-Delay': '1h' } },
        { destination: `${dest.url}/later`, headers: { 'Svc-Delay': '1h' } },
      ]),
    });
    expect(batch.status).toBe(200);

    clock.advance(5_000);
    const published = await scrape(t.url);
    // Due: the schedule's message, 6 publishes and the admitted keyed one; 1 keyed waits.
    expect(valueOf(published, 'ferry_messages{state="due"}')).toBe(8);
    expect(valueOf(published, 'ferry_messages{state="waiting"}')).toBe(1);
    expect(valueOf(published, 'ferry_messages{state="delayed"}')).toBe(3);

    let claims = 0;
    while ((await t.ferry.engine.runOnce()) > 0) claims++;
    clock.advance(5_000);
    const after = await scrape(t.url);

    const moved = Object.fromEntries(EXACT.map((s) => [s, valueOf(after, s) - valueOf(before, s)]));
    expect(moved).toEqual({
      'ferry_messages_published_total{kind="publish"}': 8,
      'ferry_messages_published_total{kind="batch"}': 2,
      'ferry_messages_published_total{kind="schedule"}': 1,
      'ferry_messages_published_total{kind="callback"}': 1,
      'ferry_messages_published_total{kind="workflow"}': 1,
      // The schedule's message, 2 + the callback's source + its callback + 2 keyed.
      'ferry_delivery_attempts_total{outcome="delivered"}': 7,
      'ferry_delivery_attempts_total{outcome="retried"}': 1,
      'ferry_delivery_attempts_total{outcome="failed"}': 1,
      'ferry_delivery_attempts_total{outcome="non_retryable"}': 1,
      ferry_dlq_moves_total: 2,
      ferry_publish_ack_seconds_count: 10, // 9 publishes and 1 batch request
      ferry_delivery_attempt_duration_seconds_count: 10,
      ferry_first_attempt_lateness_seconds_count: 10,
      ferry_claim_batch_size_count: claims,
      ferry_claim_batch_size_sum: 10,
      ferry_schedule_lateness_seconds_count: 1,
      ferry_schedule_lateness_seconds_sum: 2,
      'ferry_messages{state="due"}': 0,
      // The workflow message, the batch and the retry wait; nothing is left in flight.
      'ferry_messages{state="delayed"}': 4,
      'ferry_messages{state="waiting"}': 0,
      'ferry_messages{state="in_flight"}': 0,
      ferry_dlq_messages: 2,
    });
    expect(claims).toBeGreaterThanOrEqual(2);
    // Commits are timed (how many depends on batching), and Node's process metrics are there.
    expect(valueOf(after, 'ferry_storage_commit_seconds_count{durable="true"}')).toBeGreaterThan(
      valueOf(before, 'ferry_storage_commit_seconds_count{durable="true"}'),
    );
    for (const name of [
      'nodejs_eventloop_lag_seconds',
      'nodejs_heap_size_used_bytes',
      'nodejs_gc_duration_seconds',
    ]) {
      expect(after).toContain(`# TYPE ${name} `);
    }
    // No label carries a message id or a URL.
    expect(after).not.toContain('msg_');
    expect(after).not.toContain('127.0.0.1');
  });

  it('counts workflow runs started, succeeded, failed and cancelled, and the workflow DLQ', async () => {
    const RUNS = ['started', 'succeeded', 'failed', 'canceled'].map(
      (event) => `ferry_workflow_runs_total{event="${event}"}`,
    );
    const moved = (from: string, to: string) =>
      Object.fromEntries(
        [...RUNS, 'ferry_workflow_dlq_runs'].map((s) => [s, valueOf(to, s) - valueOf(from, s)]),
      );
    const before = await scrape(t.url);
    const trigger = (runId: string, path: string) =>
      publish(path, {
        'Svc-Workflow-RunId': runId,
        'Svc-Workflow-Init': 'true',
        'Svc-Retries': '0',
      });
    await trigger('wfr_m-done', '/ok');
    await trigger('wfr_m-cancel', '/ok');
    await trigger('wfr_m-fail', '/fail');
    while ((await t.ferry.engine.runOnce()) > 0);
    const end = (runId: string, query: string) =>
      t.api(`/v2/workflows/runs/${runId}${query}`, { method: 'DELETE', body: '"result"' });
    expect((await end('wfr_m-done', '?cancel=false')).status).toBe(200);
    expect((await end('wfr_m-cancel', '')).status).toBe(200);
    clock.advance(5_000);
    const ended = await scrape(t.url);
    expect(moved(before, ended)).toEqual({
      'ferry_workflow_runs_total{event="started"}': 3,
      'ferry_workflow_runs_total{event="succeeded"}': 1,
      'ferry_workflow_runs_total{event="failed"}': 1,
      'ferry_workflow_runs_total{event="canceled"}': 1,
      ferry_workflow_dlq_runs: 1,
    });

    // A resume starts a new run, and the failed one leaves the DLQ.
    const dlq = (await (await t.api('/v2/workflows/dlq')).json()) as {
      messages: { dlqId: string }[];
    };
    const resumed = await t.api(`/v2/workflows/dlq/resume/${dlq.messages[0]?.dlqId}`, {
      method: 'POST',
    });
    expect(resumed.status).toBe(200);
    clock.advance(5_000);
    expect(moved(ended, await scrape(t.url))).toEqual({
      'ferry_workflow_runs_total{event="started"}': 1,
      'ferry_workflow_runs_total{event="succeeded"}': 0,
      'ferry_workflow_runs_total{event="failed"}': 0,
      'ferry_workflow_runs_total{event="canceled"}': 0,
      ferry_workflow_dlq_runs: -1,
    });
  });
});

describe('/metrics options', () => {
  let t: TestFerry | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it('--metrics-token requires the bearer token', async () => {
    t = await startFerry({ args: ['--metrics-token', 'scrape-me'] });
    const open = await fetch(`${t.url}/metrics`);
    expect(open.status).toBe(401);
    expect(await open.json()).toEqual({
      error: 'GET /metrics needs Authorization: Bearer <metrics token>',
    });
    const wrong = await fetch(`${t.url}/metrics`, { headers: { authorization: 'Bearer nope' } });
    expect(wrong.status).toBe(401);
    const text = await scrape(t.url, { authorization: 'Bearer scrape-me' });
    expect(text).toContain('ferry_messages_published_total');
  });

  it('--metrics-port serves /metrics, /ready and /health apart from the API', async () => {
    t = await startFerry({ args: ['--metrics-port', '0'] });
    expect(t.ferry.metricsUrl).not.toBe(t.url);
    expect((await fetch(`${t.url}/metrics`)).status).toBe(404);
    const text = await scrape(t.ferry.metricsUrl);
    expect(text).toContain('ferry_delivery_attempts_total');
    const { version } = JSON.parse(
      readFileSync(new URL('../package.json', import.meta.url), 'utf8'),
    ) as { version: string };
    expect(valueOf(text, `ferry_build_info{version="${version}"}`)).toBe(1);
    expect((await fetch(`${t.ferry.metricsUrl}/ready`)).status).toBe(200);
    expect((await fetch(`${t.ferry.metricsUrl}/health`)).status).toBe(200);
    expect((await fetch(`${t.ferry.metricsUrl}/v2/messages/x`)).status).toBe(404);
  });

  it('--metrics-account-label adds the account to the per-account counters', async () => {
    t = await startFerry({ args: ['--metrics-account-label'] });
    const dest = await startReceiver();
    try {
      const res = await t.api(`/v2/publish/${dest.url}/a`, { method: 'POST', body: 'x' });
      expect(res.status).toBe(200);
      const text = await scrape(t.url);
      expect(
        valueOf(text, `ferry_messages_published_total{kind="publish",account="${t.account.id}"}`),
      ).toBe(1);
    } finally {
      await dest.close();
    }
  });

  it('every series is documented, and the dashboard and alert rules use only real series', async () => {
    t = await startFerry();
    const text = await scrape(t.url);
    const served = new Set(
      [...text.matchAll(/^# TYPE (\S+) (\w+)$/gm)].flatMap(([, name, type]) =>
        type === 'histogram'
          ? [`${name}_bucket`, `${name}_sum`, `${name}_count`, name ?? '']
          : [name ?? ''],
      ),
    );
    const doc = readFileSync(new URL('../docs/metrics.md', import.meta.url), 'utf8');
    for (const name of served) {
      if (name.startsWith('ferry_') && !/_(bucket|sum|count)$/.test(name)) {
        expect(doc, `${name} is not in docs/metrics.md`).toContain(`\`${name}\``);
      }
    }
    const dashboard = readFileSync(
      new URL('../docs/grafana-dashboard.json', import.meta.url),
      'utf8',
    );
    const alerts = readFileSync(new URL('../docs/prometheus-alerts.yml', import.meta.url), 'utf8');
    const exprs = [
      ...(JSON.parse(dashboard) as { panels: { targets: { expr: string }[] }[] }).panels.flatMap(
        (p) => p.targets.map((target) => target.expr),
      ),
      ...[...alerts.matchAll(/expr: (?:\|\n)?([\s\S]*?)\n\s+for:/g)].map((m) => m[1] ?? ''),
    ];
    expect(exprs.length).toBeGreaterThan(15);
    for (const expr of exprs) {
      for (const [name] of expr.matchAll(/\b(?:ferry|nodejs)_[a-z0-9_]+/g)) {
        expect(served, `${name} (in "${expr}") is not served`).toContain(name);
      }
    }
  });
});
