/**
 * `GET /v2/openapi.json`: a valid OpenAPI 3.1 document (checked with an OpenAPI validator), with
 * every route the server registered, its security schemes and the configured header prefix; and
 * real answers of a real Ferry (publish, batch, events, messages, DLQ, schedules, URL groups,
 * queues, flow control, keys, workflows, management) each match the document's schema for their
 * path, method and status (ajv, JSON Schema 2020-12).
 */
import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JSON_AJV_OPTIONS, registeredRoutes, TEXT_AJV_OPTIONS } from '../src/api/openapi.js';
import { routeSchemas } from '../src/api/schemas/index.js';
import { ManualClock } from '../src/core/clock.js';
import { STORAGES, startFerry, type TestFerry } from './helpers/ferry.js';
import { createMgmtUser, createQueueAccount, withToken } from './helpers/mgmt.js';
import { startReceiver, type Receiver } from './helpers/receiver.js';

type Json = Record<string, unknown>;
interface Operation {
  responses: Record<string, { content?: Record<string, { schema?: object }> }>;
  parameters?: { in: string; name: string }[];
  security?: Record<string, string[]>[];
  requestBody?: { required?: boolean; content?: Record<string, unknown> };
}
interface Document {
  openapi: string;
  info: { title: string; description?: string };
  paths: Record<string, Record<string, Operation>>;
  components: { securitySchemes: Record<string, Json> };
}

/** A route URL as the document writes it: `/v2/messages/:id` → `/v2/messages/{id}`. */
const templateOf = (url: string): string =>
  url.replace(/:([A-Za-z]+)/g, '{$1}').replace(/\*$/, '{destination}');

async function documentOf(baseUrl: string): Promise<Document> {
  const res = await fetch(`${baseUrl}/v2/openapi.json`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/application\/json/);
  return (await res.json()) as Document;
}

/** Checks each real answer against the document's schema for its path, method and status. */
class AnswerChecker {
  private readonly ajv = new Ajv2020({ strict: false, allErrors: true });
  /** `METHOD template status` of every answer checked. */
  readonly checked = new Set<string>();
  constructor(private readonly doc: Document) {}

  async check(method: string, template: string, res: Response): Promise<unknown> {
    const text = await res.text();
    const body: unknown = text === '' ? undefined : JSON.parse(text);
    const label = `${method} ${template} ${res.status}`;
    const operation = this.doc.paths[template]?.[method.toLowerCase()];
    expect(operation, `${label}: not in the document`).toBeDefined();
    const response = operation?.responses[String(res.status)];
    expect(response, `${label}: status not documented (${text.slice(0, 200)})`).toBeDefined();
    const schema = response?.content?.['application/json']?.schema;
    expect(schema, `${label}: no JSON schema`).toBeDefined();
    const validate = this.ajv.compile(schema as object);
    expect(validate(body) ? [] : validate.errors, `${label}: ${text.slice(0, 500)}`).toEqual([]);
    this.checked.add(label);
    return body;
  }
}

describe.each(STORAGES)('OpenAPI document on %s', (storage) => {
  let t: TestFerry;
  let clock: ManualClock;
  let doc: Document;
  let answers: AnswerChecker;
  let ok: Receiver;
  let failing: Receiver;

  beforeAll(async () => {
    clock = new ManualClock(Date.now());
    t = await startFerry({ engine: false, storage, clock });
    ok = await startReceiver(() => ({ status: 200, body: 'fine' }));
    failing = await startReceiver(() => ({ status: 500, body: 'broken' }));
    doc = await documentOf(t.url);
    answers = new AnswerChecker(doc);
  });
  afterAll(async () => {
    await t?.close();
    await ok?.close();
    await failing?.close();
  });

  /** Calls the messaging API and checks the answer against the document. */
  const call = async (
    method: string,
    template: string,
    path: string,
    init: RequestInit = {},
  ): Promise<{ status: number; body: Json & Json[] }> => {
    const res = await t.api(path, { method, ...init });
    const status = res.status;
    const body = (await answers.check(method, template, res)) as Json & Json[];
    return { status, body };
  };
  const drive = async (): Promise<void> => {
    for (let round = 0; round < 50; round++) if ((await t.ferry.engine.runOnce()) === 0) return;
    throw new Error('did not settle');
  };

  it('is a valid OpenAPI 3.1 document', async () => {
    expect(doc.openapi).toMatch(/^3\.1\./);
    const result = await new Validator().validate(doc as unknown as Record<string, unknown>);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
  });

  it('is served without a token and the same each time', async () => {
    const first = await (await fetch(`${t.url}/v2/openapi.json`)).text();
    const second = await (await fetch(`${t.url}/v2/openapi.json?queue_token=nope`)).text();
    expect(second).toBe(first);
  });

  it('has every registered route, with a schema of its own', () => {
    const routes = registeredRoutes(t.ferry.server).filter((r) => !r.url.startsWith('/console'));
    expect(routes.length).toBeGreaterThan(60);
    const missing = routes
      .filter((r) => !r.documented || !doc.paths[templateOf(r.url)]?.[r.method.toLowerCase()])
      .map((r) => `${r.method} ${r.url}`);
    expect(missing).toEqual([]);
    // And nothing documented that the server does not serve.
    const served = new Set(routes.map((r) => `${r.method.toLowerCase()} ${templateOf(r.url)}`));
    const extra = Object.entries(doc.paths).flatMap(([path, ops]) =>
      Object.keys(ops)
        .map((method) => `${method} ${path}`)
        .filter((op) => !served.has(op)),
    );
    expect(extra).toEqual([]);
  });

  it('describes both security schemes, the token query form and the error shape', () => {
    const schemes = doc.components.securitySchemes;
    expect(schemes.bearerToken).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(schemes.queueToken).toMatchObject({ type: 'apiKey', in: 'query', name: 'queue_token' });
    expect(schemes.managementBasic).toMatchObject({ type: 'http', scheme: 'basic' });
    const publish = doc.paths['/v2/publish/{destination}']?.post;
    expect(publish?.security).toContainEqual({ bearerToken: [] });
    expect(publish?.security).toContainEqual({ queueToken: [] });
    expect(doc.paths['/v2/queue']?.post?.security).toEqual([{ managementBasic: [] }]);
    const error = publish?.responses['400']?.content?.['application/json']?.schema;
    expect(error).toMatchObject({ type: 'object', required: ['error'] });
    // A publish body may be empty; a batch needs one.
    expect(publish?.requestBody).toMatchObject({ required: false, content: { '*/*': {} } });
    expect(doc.paths['/v2/batch']?.post?.requestBody?.required).toBe(true);
    const headers = (publish?.parameters ?? []).filter((p) => p.in === 'header');
    expect(headers.map((h) => h.name)).toEqual(
      expect.arrayContaining(['Svc-Retries', 'Svc-Delay', 'Svc-Callback', 'Svc-Workflow-RunId']),
    );
  });

  it('validates input from the same schemas: a 400 naming the field', async () => {
    const count = await call('GET', '/v2/events', '/v2/events?count=abc');
    expect(count.status).toBe(400);
    expect(count.body.error).toBe('query parameter "count": must be integer');
    const big = await call('GET', '/v2/events', '/v2/events?count=5000');
    expect(big.body.error).toBe('query parameter "count": must be <= 1000');
    // An empty value is no value, as Ferry's query parsers read it.
    expect((await call('GET', '/v2/events', '/v2/events?count=')).status).toBe(200);
    const queue = await call('POST', '/v2/queues', '/v2/queues', {
      body: JSON.stringify({ queueName: 'q1', parallelism: 'two' }),
    });
    expect(queue.status).toBe(400);
    expect(queue.body.error).toMatch(/^body\.parallelism: /);
    const batch = await call('POST', '/v2/batch', '/v2/batch', {
      body: JSON.stringify([{ destination: ok.url }, { body: 'no destination' }]),
    });
    expect(batch.status).toBe(400);
    expect(batch.body.error).toBe('entry 1: "destination" is required');
    // The publish body is any bytes, passed through (a JSON-looking body is not checked).
    const raw = await call('POST', '/v2/publish/{destination}', `/v2/publish/${ok.url}/raw`, {
      body: '[not json',
    });
    expect(raw.status).toBe(200);
    await drive();
    expect(ok.requests.at(-1)?.body.toString()).toBe('[not json');
  });

  it('real answers of the messaging API match the document', async () => {
    const P = '/v2/publish/{destination}';
    const one = await call('POST', P, `/v2/publish/${ok.url}/a`, {
      headers: { 'Svc-Label': 'doc', 'Svc-Delay': '1h', 'Svc-Deduplication-Id': 'd1' },
      body: 'hello',
    });
    expect(one.status).toBe(200);
    const messageId = one.body.messageId as string;
    expect(
      (
        await call('POST', P, `/v2/publish/${ok.url}/a`, {
          headers: { 'Svc-Deduplication-Id': 'd1' },
          body: 'hello',
        })
      ).status,
    ).toBe(202);
    await call('GET', '/v2/messages/{id}', `/v2/messages/${messageId}`);
    await call('GET', '/v2/messages/{id}', '/v2/messages/msg_nope');
    await call('DELETE', '/v2/messages/{id}', `/v2/messages/${messageId}`);
    await call('DELETE', '/v2/messages', '/v2/messages?label=nothing');
    await call('POST', P, `/v2/publish/${ok.url}/a`, { headers: { 'Svc-Retries': 'x' } });
    expect(
      (
        await t.api(`/v2/publish/${ok.url}`, {
          method: 'POST',
          headers: { authorization: 'Bearer nope' },
        })
      ).status,
    ).toBe(401);
    await answers.check(
      'POST',
      P,
      await fetch(`${t.url}/v2/publish/${ok.url}`, { method: 'POST' }),
    );

    // URL groups.
    const T = '/v2/topics/{name}';
    await call('POST', `${T}/endpoints`, '/v2/topics/g1/endpoints', {
      body: JSON.stringify({
        endpoints: [{ url: `${ok.url}/g`, name: 'e1' }, { url: `${ok.url}/h` }],
      }),
    });
    await call('PATCH', T, '/v2/topics/g1', {
      body: JSON.stringify({ headers: { 'Svc-Retries': '1' } }),
    });
    await call('GET', '/v2/topics', '/v2/topics');
    await call('GET', T, '/v2/topics/g1');
    const group = await call('POST', P, '/v2/publish/g1', { body: 'to the group' });
    expect(group.body).toHaveLength(2);
    await call('DELETE', `${T}/endpoints`, '/v2/topics/g1/endpoints', {
      body: JSON.stringify({ endpoints: [{ name: 'e1' }] }),
    });
    await call('GET', T, '/v2/topics/nope');

    // Batch, with a queue.
    const batch = await call('POST', '/v2/batch', '/v2/batch', {
      body: JSON.stringify([
        { destination: `${ok.url}/b1`, body: 'x' },
        { destination: `${failing.url}/b2`, headers: { 'Svc-Retries': '0' }, queue: 'qb' },
        { destination: 'g1', body: { json: true } },
      ]),
    });
    expect(batch.body).toHaveLength(3);
    await drive();

    // Events and logs.
    const events = await call('GET', '/v2/events', '/v2/events?count=50');
    expect((events.body.events as Json[]).length).toBeGreaterThan(3);
    await call('GET', '/v2/logs', '/v2/logs?state=DELIVERED');
    await call('GET', '/v2/events', '/v2/events?labeel=x');

    // DLQ: the failing delivery.
    const dlq = await call('GET', '/v2/dlq', '/v2/dlq');
    const [entry] = dlq.body.messages as Json[];
    expect(entry?.dlqId).toBeDefined();
    const dlqId = entry?.dlqId as string;
    await call('GET', '/v2/dlq/{dlqId}', `/v2/dlq/${dlqId}`);
    await call('POST', '/v2/dlq/retry/{dlqId}', `/v2/dlq/retry/${dlqId}`, {
      headers: { 'Svc-Retries': '0' },
    });
    await drive();
    await call('POST', '/v2/dlq/retry', '/v2/dlq/retry?count=1');
    await drive();
    const again = await call('GET', '/v2/dlq', '/v2/dlq');
    const second = (again.body.messages as Json[])[0]?.dlqId as string;
    await call('DELETE', '/v2/dlq/{dlqId}', `/v2/dlq/${second}`);
    await call('DELETE', '/v2/dlq', '/v2/dlq?label=none');
    await call('GET', '/v2/dlq/{dlqId}', '/v2/dlq/dlq_nope');

    // Schedules.
    const S = '/v2/schedules/{id}';
    const created = await call('POST', '/v2/schedules/{destination}', `/v2/schedules/${ok.url}/s`, {
      headers: { 'Svc-Cron': '*/5 * * * *', 'Svc-Label': 'cron', 'Content-Type': 'text/plain' },
      body: 'tick',
    });
    const scheduleId = created.body.scheduleId as string;
    await call('POST', '/v2/schedules/{destination}', `/v2/schedules/${ok.url}/s`, {});
    await call('GET', '/v2/schedules', '/v2/schedules');
    await call('GET', S, `/v2/schedules/${scheduleId}`);
    await call('PATCH', `${S}/pause`, `/v2/schedules/${scheduleId}/pause`);
    await call('POST', `${S}/resume`, `/v2/schedules/${scheduleId}/resume`);
    await call('DELETE', S, `/v2/schedules/${scheduleId}`);
    await call('GET', S, `/v2/schedules/${scheduleId}`);

    // Queues and flow control.
    await call('POST', '/v2/queues', '/v2/queues', {
      body: JSON.stringify({ queueName: 'q1', parallelism: 2 }),
    });
    await call('POST', '/v2/enqueue/{queue}/{destination}', `/v2/enqueue/q1/${ok.url}/q`, {
      headers: { 'Svc-Delay': '1h' },
      body: 'queued',
    });
    await call('GET', '/v2/queues', '/v2/queues');
    await call('GET', '/v2/queues/{name}', '/v2/queues/q1');
    await call('POST', '/v2/queues/{name}/pause', '/v2/queues/q1/pause');
    await call('POST', '/v2/queues/{name}/resume', '/v2/queues/q1/resume');
    await call('DELETE', '/v2/queues/{name}', '/v2/queues/q1');
    await call('POST', P, `/v2/publish/${ok.url}/fc`, {
      headers: {
        'Svc-Flow-Control-Key': 'k1',
        'Svc-Flow-Control-Value': 'parallelism=2',
        'Svc-Delay': '1h',
      },
    });
    const F = '/v2/flowControl/{key}';
    await call('GET', '/v2/flowControl', '/v2/flowControl');
    await call('GET', F, '/v2/flowControl/k1');
    await call('POST', `${F}/pause`, '/v2/flowControl/k1/pause');
    await call('POST', `${F}/resume`, '/v2/flowControl/k1/resume');
    await call('POST', `${F}/pin`, '/v2/flowControl/k1/pin?parallelism=1&period=1m&rate=5');
    await call('POST', `${F}/unpin`, '/v2/flowControl/k1/unpin?parallelism=true');
    await call('POST', `${F}/resetRate`, '/v2/flowControl/k1/resetRate');
    await call('GET', F, '/v2/flowControl/nope');
    await call('GET', '/v2/globalParallelism', '/v2/globalParallelism');

    // Signing keys.
    await call('GET', '/v2/keys', '/v2/keys');
    await call('POST', '/v2/keys/rotate', '/v2/keys/rotate');
  });

  it('real answers of the workflow endpoints match the document', async () => {
    const runId = 'wfr_openapi';
    const wf = {
      'Svc-Workflow-RunId': runId,
      'Svc-Workflow-Url': `${failing.url}/wf`,
      'Svc-Retries': '0',
      'Svc-Failure-Callback': `${ok.url}/failed`,
    };
    await call('POST', '/v2/publish/{destination}', `/v2/publish/${failing.url}/wf`, {
      headers: { ...wf, 'Svc-Workflow-Init': 'true' },
      body: JSON.stringify({ hello: 'workflow' }),
    });
    await call('GET', '/v2/workflows/runs/{runId}', `/v2/workflows/runs/${runId}`);
    await call('GET', '/v2/workflows/logs', '/v2/workflows/logs');
    await call('GET', '/v2/waiters/{eventId}', '/v2/waiters/ev1');
    await call('POST', '/v2/notify/{eventId}', '/v2/notify/ev1', { body: 'data' });
    await drive();
    const dlq = await call('GET', '/v2/workflows/dlq', '/v2/workflows/dlq');
    const dlqId = (dlq.body.messages as Json[])[0]?.dlqId as string;
    expect(dlqId).toBeDefined();
    await call('GET', '/v2/dlq', '/v2/dlq?source=workflow');
    await call('GET', '/v2/workflows/dlq/{dlqId}', `/v2/workflows/dlq/${dlqId}`);
    await call('GET', '/v2/workflows/events', `/v2/workflows/events?workflowRunId=${runId}`);
    await call('POST', '/v2/workflows/dlq/restart/{dlqId}', `/v2/workflows/dlq/restart/${dlqId}`);
    // The failed run (its failure function's log) and the restarted one (`resumedFrom`, the step
    // it is at).
    await call('GET', '/v2/workflows/logs', '/v2/workflows/logs');
    await call('DELETE', '/v2/workflows/runs', '/v2/workflows/runs?workflowRunIds=nope');
    await call('DELETE', '/v2/workflows/runs/{runId}', `/v2/workflows/runs/${runId}?cancel=true`);
    await call('DELETE', '/v2/workflows/runs/{runId}', `/v2/workflows/runs/${runId}?cancel=maybe`);
    await call('DELETE', '/v2/workflows/dlq', '/v2/workflows/dlq?dlqIds=nope');
    await call('POST', '/v2/workflows/dlq/resume', '/v2/workflows/dlq/resume?dlqIds=nope');
  });

  it('real answers of the management API match the document', async () => {
    const mgmtDoc = await documentOf(t.ferry.mgmtUrl);
    const mgmt = new AnswerChecker(mgmtDoc);
    const user = await createMgmtUser(t, true);
    const check = async (method: string, template: string, path: string, body?: unknown) =>
      (await mgmt.check(
        method,
        template,
        await user.api(path, {
          method,
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        }),
      )) as Json;
    const account = await check('POST', '/v2/queue', '/v2/queue', { type: 'paid' });
    const id = account.id as string;
    await check('POST', '/v2/queue', '/v2/queue', { type: 'gold' });
    const typo = await check('POST', '/v2/queue', '/v2/queue', { tpye: 'paid' });
    expect(typo.error).toBe('body: unknown field "tpye" (allowed: region, type)');
    await check('GET', '/v2/queue', '/v2/queue');
    await check('GET', '/v2/queue/{id}', `/v2/queue/${id}`);
    await check('POST', '/v2/queue/set-plan/{id}', `/v2/queue/set-plan/${id}`, {
      plan_name: 'free',
    });
    await check('PATCH', '/v2/queue/update-budget/{id}', `/v2/queue/update-budget/${id}`, {
      budget: 5,
    });
    await check('POST', '/v2/queue/rotate-token/{id}', `/v2/queue/rotate-token/${id}`);
    await check('GET', '/v2/queue/stats/{id}', `/v2/queue/stats/${id}?period=1d`);
    await check('GET', '/v2/queue/stats/{id}', `/v2/queue/stats/${id}?period=1y`);
    const index = await check('POST', '/v2/search', '/v2/search', {
      name: 'idx',
      region: 'eu-west-1',
      type: 'free',
    });
    const indexId = index.id as string;
    await check('GET', '/v2/search', '/v2/search');
    await check('GET', '/v2/search/{id}', `/v2/search/${indexId}`);
    await check('POST', '/v2/search/{id}/rename', `/v2/search/${indexId}/rename`, { name: 'idx2' });
    await check('POST', '/v2/search/{id}/reset-password', `/v2/search/${indexId}/reset-password`);
    await check('DELETE', '/v2/search/{id}', `/v2/search/${indexId}`);
    await check('POST', '/v2/admin/users', '/v2/admin/users', { email: 'doc@example.com' });
    await check('POST', '/v2/admin/users', '/v2/admin/users', { email: 'doc@example.com' });
    await check('DELETE', '/v2/queue/{id}', `/v2/queue/${id}`);
    await check('GET', '/v2/queue/{id}', `/v2/queue/${id}`);
    await mgmt.check('GET', '/v2/queue', await fetch(`${t.ferry.mgmtUrl}/v2/queue`));
    // A messaging account made here works with its token.
    const other = await createQueueAccount(user, {});
    expect((await withToken(t.url, other.token)('/v2/keys')).status).toBe(200);

    for (const [template, path] of [
      ['/health', '/health'],
      ['/ready', '/ready'],
    ]) {
      await answers.check('GET', template as string, await fetch(`${t.url}${path}`));
    }
  });

  it('checked a representative set of answers, and would catch a wrong one', () => {
    const expected = [
      'POST /v2/publish/{destination} 200',
      'POST /v2/publish/{destination} 202',
      'POST /v2/publish/{destination} 400',
      'POST /v2/publish/{destination} 401',
      'POST /v2/batch 200',
      'POST /v2/batch 400',
      'GET /v2/events 200',
      'GET /v2/events 400',
      'GET /v2/logs 200',
      'GET /v2/messages/{id} 200',
      'GET /v2/messages/{id} 404',
      'DELETE /v2/messages 200',
      'GET /v2/dlq 200',
      'GET /v2/dlq/{dlqId} 200',
      'POST /v2/dlq/retry/{dlqId} 201',
      'POST /v2/dlq/retry 201',
      'DELETE /v2/dlq 200',
      'POST /v2/schedules/{destination} 200',
      'GET /v2/schedules 200',
      'GET /v2/schedules/{id} 200',
      'PATCH /v2/schedules/{id}/pause 200',
      'POST /v2/topics/{name}/endpoints 200',
      'GET /v2/topics 200',
      'POST /v2/queues 200',
      'POST /v2/queues 400',
      'POST /v2/enqueue/{queue}/{destination} 200',
      'GET /v2/queues/{name} 200',
      'GET /v2/flowControl 200',
      'POST /v2/flowControl/{key}/pin 200',
      'GET /v2/globalParallelism 200',
      'GET /v2/keys 200',
      'POST /v2/keys/rotate 200',
      'GET /v2/workflows/runs/{runId} 200',
      'GET /v2/workflows/logs 200',
      'GET /v2/workflows/dlq 200',
      'GET /v2/workflows/dlq/{dlqId} 200',
      'POST /v2/workflows/dlq/restart/{dlqId} 200',
      'POST /v2/notify/{eventId} 201',
      'GET /health 200',
      'GET /ready 200',
    ];
    expect(expected.filter((label) => !answers.checked.has(label))).toEqual([]);
    // The schemas are strict enough to fail a wrong answer.
    const schema = doc.paths['/v2/publish/{destination}']?.post?.responses['200']?.content?.[
      'application/json'
    ]?.schema as object;
    const validate = new Ajv2020({ strict: false }).compile(schema);
    expect(validate({ messageId: 'msg_1', deduplicated: false })).toBe(true);
    expect(validate({ messageId: 1, deduplicated: false })).toBe(false);
    expect(validate({ deduplicated: false })).toBe(false);
  });
});

describe('header prefix', () => {
  let t: TestFerry;
  beforeAll(async () => {
    t = await startFerry({
      engine: false,
      args: ['--header-prefix', 'Upstash', '--mgmt-port', '0'],
    });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('the document shows the configured prefix', async () => {
    const doc = await documentOf(t.url);
    const names = (doc.paths['/v2/publish/{destination}']?.post?.parameters ?? [])
      .filter((p) => p.in === 'header')
      .map((p) => p.name);
    expect(names).toContain('Upstash-Retries');
    expect(names).toContain('Upstash-Flow-Control-Key');
    expect(names.filter((n) => n.startsWith('Svc-'))).toEqual([]);
    const schedule = doc.paths['/v2/schedules/{destination}']?.post?.parameters ?? [];
    expect(schedule.map((p) => p.name)).toContain('Upstash-Cron');
  });

  it("each port's document describes the APIs that port serves", async () => {
    const main = (await documentOf(t.url)).info.description ?? '';
    expect(main).toContain('`Upstash-…`');
    expect(main).toMatch(/management API is served on a port of its own/);
    expect(main).not.toMatch(/and management API/);
    const mgmt = (await documentOf(t.ferry.mgmtUrl)).info.description ?? '';
    expect(mgmt).toMatch(/^Ferry's management API/);
    expect(mgmt).not.toMatch(/Publish settings|Svc-/);
  });
});

describe('request schemas', () => {
  it('compile, for every route and header prefix (a server compiles them at first use)', () => {
    // With the options the server compiles them with.
    const text = new Ajv2020(TEXT_AJV_OPTIONS);
    const json = new Ajv2020(JSON_AJV_OPTIONS);
    let compiled = 0;
    for (const prefix of ['Svc', 'Upstash']) {
      for (const [route, schema] of routeSchemas(prefix)) {
        for (const part of ['params', 'querystring', 'headers', 'body'] as const) {
          const partSchema = schema[part];
          if (!partSchema) continue;
          const ajv = part === 'body' ? json : text;
          expect(() => ajv.compile(partSchema), `${prefix}: ${route} ${part}`).not.toThrow();
          compiled++;
        }
      }
    }
    expect(compiled).toBeGreaterThan(100);
  });
});
