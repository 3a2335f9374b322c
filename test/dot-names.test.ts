/**
 * `.` and `..` as names (core/names.ts): every route that creates a queue, schedule, URL group,
 * endpoint, flow-control key or workflow run refuses them with a 400 naming the field, since URL
 * parsers drop them from paths and no fetch-based client could address the resource. A queue
 * stored with such a name earlier can still be addressed by a client that sends the path as
 * written (`curl --path-as-is`), and removed.
 */
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STORAGES, startFerry, type TestFerry } from './helpers/ferry.js';

/** A request with its path sent exactly as written (fetch would resolve `.` and `..`). */
function raw(
  t: TestFerry,
  method: string,
  path: string,
  body?: string,
): Promise<{ status: number; error?: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      `${t.url}/`,
      { method, path, headers: { authorization: `Bearer ${t.token}` } },
      (res) => {
        let text = '';
        res.on('data', (chunk: Buffer) => (text += chunk.toString()));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            error: text ? (JSON.parse(text) as { error?: string }).error : undefined,
          }),
        );
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

async function answer(res: Response): Promise<{ status: number; error?: string }> {
  const text = await res.text();
  return { status: res.status, error: text ? (JSON.parse(text) as { error?: string }).error : '' };
}

const escape = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The 400 that names `field` and the refused `name`. */
const refused = (field: string, name: string) => ({
  status: 400,
  error: expect.stringMatching(
    new RegExp(`^invalid ${escape(field)} "${escape(name)}": "\\." and "\\.\\." cannot be`),
  ),
});

describe.each(STORAGES)('"." and ".." as names (%s)', (storage) => {
  let t: TestFerry;
  const destination = 'http://127.0.0.1:9/dot';
  beforeAll(async () => {
    t = await startFerry({ engine: false, storage });
  });
  afterAll(async () => {
    await t.close();
  });

  const post = (path: string, headers: Record<string, string> = {}, body?: string) =>
    t.api(path, { method: 'POST', headers, body }).then(answer);

  it.each(['.', '..'])('refuses %o as a queue name wherever a queue is created', async (name) => {
    expect(await post('/v2/queues', {}, JSON.stringify({ queueName: name }))).toEqual(
      refused('body.queueName', name),
    );
    expect(await raw(t, 'POST', `/v2/enqueue/${name}/${destination}`, 'x')).toEqual(
      refused('queue name', name),
    );
    const batch = [{ destination, queue: name, body: 'x' }];
    expect(await post('/v2/batch', {}, JSON.stringify(batch))).toMatchObject({ status: 400 });
    expect((await post('/v2/batch', {}, JSON.stringify(batch))).error).toContain(
      `"${name}": "." and ".." cannot be`,
    );
    // A name that merely holds dots is a name.
    expect((await post('/v2/queues', {}, JSON.stringify({ queueName: `${name}.x` }))).status).toBe(
      200,
    );
    const names = ((await (await t.api('/v2/queues')).json()) as { name: string }[]).map(
      (q) => q.name,
    );
    expect(names).toEqual([`${name}.x`]);
    await t.api(`/v2/queues/${name}.x`, { method: 'DELETE' });
  });

  it.each(['.', '..'])('refuses %o as a schedule id and a schedule’s queue', async (name) => {
    const cron = { 'Svc-Cron': '*/5 * * * *' };
    expect(
      await post(`/v2/schedules/${destination}`, { ...cron, 'Svc-Schedule-Id': name }),
    ).toEqual(refused('Svc-Schedule-Id', name));
    expect(await post(`/v2/schedules/${destination}`, { ...cron, 'Svc-Queue-Name': name })).toEqual(
      refused('Svc-Queue-Name', name),
    );
    expect(await (await t.api('/v2/schedules')).json()).toEqual([]);
  });

  it.each(['.', '..'])('refuses %o as a URL group or endpoint name', async (name) => {
    const body = (endpoint: object) => JSON.stringify({ endpoints: [endpoint] });
    expect(
      await raw(t, 'POST', `/v2/topics/${name}/endpoints`, body({ url: destination })),
    ).toEqual(refused('URL group name', name));
    expect(await post('/v2/topics/group/endpoints', {}, body({ url: destination, name }))).toEqual(
      refused('endpoints[0].name', name),
    );
    expect(await (await t.api('/v2/topics')).json()).toEqual([]);
  });

  it.each(['.', '..'])('refuses %o as a flow-control key', async (name) => {
    const flow = { 'Svc-Flow-Control-Key': name, 'Svc-Flow-Control-Value': 'parallelism=1' };
    expect(await post(`/v2/publish/${destination}`, flow)).toEqual(
      refused('Svc-Flow-Control-Key', name),
    );
    expect(
      await post(`/v2/publish/${destination}?svc-flow-control-key=${name}`, {
        'Svc-Flow-Control-Value': 'parallelism=1',
      }),
    ).toEqual(refused('Svc-Flow-Control-Key', name));
    expect(
      await post(`/v2/schedules/${destination}`, { ...flow, 'Svc-Cron': '*/5 * * * *' }),
    ).toEqual(refused('Svc-Flow-Control-Key', name));
    // As a URL group's default header, which every publish to the group would send.
    await post(
      '/v2/topics/flow/endpoints',
      {},
      JSON.stringify({ endpoints: [{ url: destination }] }),
    );
    const patch = await t
      .api('/v2/topics/flow', {
        method: 'PATCH',
        body: JSON.stringify({
          headers: { 'Svc-Flow-Control-Key': [name], 'Svc-Flow-Control-Value': ['rate=1'] },
        }),
      })
      .then(answer);
    expect(patch).toEqual(refused('Svc-Flow-Control-Key', name));
    await t.api('/v2/topics/flow', { method: 'DELETE' });
    expect(await (await t.api('/v2/flowControl')).json()).toEqual([]);
  });

  it.each(['.', '..'])('refuses %o as the id of a workflow run it starts', async (name) => {
    const start = { 'Svc-Workflow-RunId': name, 'Svc-Workflow-Init': 'true' };
    expect(await post(`/v2/publish/${destination}`, start)).toEqual(
      refused('Svc-Workflow-RunId', name),
    );
  });

  it('still addresses a queue stored as ".." before, through a path sent as written', async () => {
    const result = await t.ferry.driver.executor.queueUpsert({
      accountId: t.account.id,
      name: '..',
      now: Date.now(),
      maxQueues: 100,
    });
    expect(result).not.toBe('limit');
    expect(await raw(t, 'POST', '/v2/queues/../pause', '')).toMatchObject({ status: 200 });
    expect(await (await t.api('/v2/queues')).json()).toMatchObject([{ name: '..', paused: true }]);
    expect(await raw(t, 'DELETE', '/v2/queues/..')).toMatchObject({ status: 200 });
    expect(await (await t.api('/v2/queues')).json()).toEqual([]);
  });
});
