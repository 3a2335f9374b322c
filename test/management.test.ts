/**
 * The management API end to end over real HTTP: users and Basic auth, messaging accounts (every
 * field, plan changes enforced by the messaging API, budget, deletion), token reset, search
 * indexes and the separate management port.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/core/clock.js';
import { DEFAULT_PLANS } from '../src/core/plans.js';
import { makeDlqEntry, makeMessage } from '../src/storage/conformance/fixtures.js';
import { STORAGES, startFerry, type TestFerry } from './helpers/ferry.js';
import {
  basic,
  createMgmtUser,
  createQueueAccount,
  mgmtUserOf,
  withToken,
  type MgmtUser,
} from './helpers/mgmt.js';

const ACCOUNT_FIELDS: Record<string, string> = {
  customer_id: 'string',
  id: 'string',
  password: 'string',
  token: 'string',
  active: 'boolean',
  state: 'string',
  modifying_state: 'string',
  last_plan_upgrade_time: 'number',
  max_message_size: 'number',
  max_requests_per_day: 'number',
  max_requests_per_day_hard: 'number',
  max_endpoints_per_topic: 'number',
  max_requests_per_second: 'number',
  max_dlq_size: 'number',
  max_completion_tokens_per_day: 'number',
  max_completion_tokens_per_minute: 'number',
  max_completions_per_day: 'number',
  max_completions_per_minute: 'number',
  max_retries: 'number',
  max_topics: 'number',
  max_schedules: 'number',
  max_events_size: 'number',
  max_dlq_retention_time_milis: 'number',
  max_delay: 'number',
  max_parallelism: 'number',
  max_global_parallelism: 'number',
  max_queues: 'number',
  retention: 'number',
  timeout: 'number',
  rate_limit: 'number',
  type: 'string',
  reserved_price: 'number',
  prod_pack_enabled: 'boolean',
  metrics_enabled: 'string',
  region: 'string',
  budget: 'number',
  created_by: 'string',
  creation_time: 'number',
};

const INDEX_FIELDS: Record<string, string> = {
  customer_id: 'string',
  id: 'string',
  name: 'string',
  endpoint: 'string',
  type: 'string',
  region: 'string',
  partner_email: 'string',
  token: 'string',
  read_only_token: 'string',
  max_vector_count: 'number',
  max_monthly_reranks: 'number',
  max_daily_updates: 'number',
  max_daily_queries: 'number',
  max_monthly_bandwidth: 'number',
  max_writes_per_second: 'number',
  max_query_per_second: 'number',
  max_reads_per_request: 'number',
  max_writes_per_request: 'number',
  creation_time: 'number',
  input_enrichment_enabled: 'boolean',
  throughput_vector: 'object',
};

function typesOf(object: Record<string, unknown>): Record<string, string> {
  return Object.fromEntries(Object.entries(object).map(([k, v]) => [k, typeof v]));
}

async function errorOf(res: Response, status: number): Promise<string> {
  expect(res.status).toBe(status);
  return ((await res.json()) as { error: string }).error;
}

describe.each(STORAGES)('on %s', (storage) => {
  let t: TestFerry;
  let clock: ManualClock;
  let admin: MgmtUser;

  beforeEach(async () => {
    clock = new ManualClock(Date.UTC(2026, 2, 10, 12, 0, 30));
    t = await startFerry({ clock, engine: false, storage });
    admin = await createMgmtUser(t, true);
  });
  afterEach(async () => {
    await t.close();
  });

  describe('users and authentication', () => {
    it('401 with WWW-Authenticate for missing, malformed and wrong credentials', async () => {
      for (const authorization of [
        undefined,
        'Basic !!!',
        `Bearer ${t.token}`,
        basic(admin.email, 'wrong-key'),
        basic('nobody@example.com', admin.apiKey),
      ]) {
        const res = await fetch(`${t.url}/v2/queue`, {
          headers: authorization === undefined ? {} : { authorization },
        });
        expect(await errorOf(res, 401)).toMatch(/credentials|API key/);
        expect(res.headers.get('www-authenticate')).toMatch(/^Basic /);
      }
    });

    it('an administrator creates users (the key shown once); others may not', async () => {
      const created = await admin.json<{ email: string; api_key: string }>('/v2/admin/users', {
        method: 'POST',
        body: JSON.stringify({ email: 'Alice@Example.com' }),
      });
      expect(Object.keys(created).sort()).toEqual(['api_key', 'email']);
      expect(created.email).toBe('alice@example.com');
      const alice = mgmtUserOf(t.url, created.email, created.api_key);
      expect(await alice.json('/v2/queue')).toEqual([]);

      const again = await admin.api('/v2/admin/users', {
        method: 'POST',
        body: JSON.stringify({ email: 'alice@example.com' }),
      });
      expect(await errorOf(again, 409)).toMatch(/alice@example.com/);
      const bad = await admin.api('/v2/admin/users', {
        method: 'POST',
        body: JSON.stringify({ email: 'not-an-email' }),
      });
      expect(await errorOf(bad, 400)).toMatch(/email/);
      const notAdmin = await alice.api('/v2/admin/users', {
        method: 'POST',
        body: JSON.stringify({ email: 'bob@example.com' }),
      });
      expect(await errorOf(notAdmin, 403)).toMatch(/administrators/);
    });

    it('messaging auth does not run on management paths, nor Basic auth on messaging paths', async () => {
      expect((await withToken(t.url, t.token)('/v2/queue')).status).toBe(401);
      const res = await fetch(`${t.url}/v2/messages/msg_x`, {
        headers: { authorization: basic(admin.email, admin.apiKey) },
      });
      expect(await errorOf(res, 401)).toMatch(/token/);
    });
  });

  describe('messaging accounts', () => {
    it('creates an account with every field of interface.md, usable at once', async () => {
      const account = await createQueueAccount(admin, { region: 'eu-central-1' });
      expect(typesOf(account)).toEqual(ACCOUNT_FIELDS);
      const free = DEFAULT_PLANS.free;
      expect(account).toMatchObject({
        customer_id: admin.email,
        created_by: admin.email,
        active: true,
        state: 'active',
        type: 'free',
        region: 'eu-central-1',
        metrics_enabled: 'true',
        budget: 0,
        last_plan_upgrade_time: 0,
        creation_time: Math.floor(clock.now() / 1000),
        max_retries: free.max_retries,
        max_message_size: free.max_message_size,
        max_dlq_retention_time_milis: free.max_dlq_retention_time_milis,
        timeout: free.timeout,
        rate_limit: free.max_requests_per_second,
      });
      expect(JSON.parse(Buffer.from(account.token, 'base64').toString())).toEqual({
        UserID: account.id,
        Password: account.password,
      });
      const keys = await withToken(t.url, account.token)('/v2/keys');
      expect(keys.status).toBe(200);

      // The owner reads the credentials again (stored sealed, see management-secrets.test.ts).
      const read = await admin.json(`/v2/queue/${account.id}`);
      expect(read).toEqual(account);
      expect(await admin.json('/v2/queue')).toEqual([read]);
    });

    it('validates the create body, naming the field', async () => {
      for (const [body, field] of [
        [{ region: 'mars-1' }, /region/],
        [{ type: 'gold' }, /type/],
        [{ colour: 'red' }, /colour/],
      ] as const) {
        const res = await admin.api('/v2/queue', { method: 'POST', body: JSON.stringify(body) });
        expect(await errorOf(res, 400)).toMatch(field);
      }
      const res = await admin.api('/v2/queue', { method: 'POST', body: '{nope' });
      expect(await errorOf(res, 400)).toMatch(/JSON/);
    });

    it('set-plan changes what the messaging API enforces', async () => {
      const account = await createQueueAccount(admin, { type: 'free' });
      const api = withToken(t.url, account.token);
      const publish = () =>
        api('/v2/publish/https://example.com/x', {
          method: 'POST',
          headers: { 'Svc-Retries': '10' },
          body: 'x',
        });
      expect(await errorOf(await publish(), 412)).toMatch(/max_retries \(3\)/);

      clock.advance(5_000);
      const paid = await admin.json(`/v2/queue/set-plan/${account.id}`, {
        method: 'POST',
        body: JSON.stringify({ plan_name: 'paid' }),
      });
      expect(paid).toMatchObject({
        type: 'paid',
        max_retries: DEFAULT_PLANS.paid.max_retries,
        last_plan_upgrade_time: Math.floor(clock.now() / 1000),
      });
      expect((await publish()).status).toBe(200);

      await admin.json(`/v2/queue/set-plan/${account.id}`, {
        method: 'POST',
        body: JSON.stringify({ plan_name: 'free' }),
      });
      expect((await publish()).status).toBe(412);
      const bad = await admin.api(`/v2/queue/set-plan/${account.id}`, {
        method: 'POST',
        body: JSON.stringify({ plan_name: 'gold' }),
      });
      expect(await errorOf(bad, 400)).toMatch(/plan_name/);
    });

    it('budget: publishes past the month’s budget get 429 naming it', async () => {
      const account = await createQueueAccount(admin, { type: 'paid' });
      const api = withToken(t.url, account.token);
      const publish = () => api('/v2/publish/https://example.com/x', { method: 'POST', body: 'x' });
      for (const budget of [-1, 1.5, 'ten']) {
        const res = await admin.api(`/v2/queue/update-budget/${account.id}`, {
          method: 'PATCH',
          body: JSON.stringify({ budget }),
        });
        expect(await errorOf(res, 400)).toMatch(/budget/);
      }
      const updated = await admin.json(`/v2/queue/update-budget/${account.id}`, {
        method: 'PATCH',
        body: JSON.stringify({ budget: 1 }),
      });
      expect(updated.budget).toBe(1);
      // $1 per 100,000 messages: 100,000 this month already; one more is past $1.
      await t.ferry.driver.executor.usageAddMany({
        counts: [
          {
            subjectId: account.id,
            minute: clock.now() - 60_000,
            metric: 'messages',
            value: 99_999,
          },
        ],
      });
      expect((await publish()).status).toBe(200); // the 100,000th: exactly $1
      const refused = await publish();
      expect(await errorOf(refused, 429)).toMatch(/budget of \$1/);
      // Every way of creating messages is held to the budget: batch, and a retry from the DLQ.
      const batch = await api('/v2/batch', {
        method: 'POST',
        body: JSON.stringify([{ destination: 'https://example.com/b', body: 'b' }]),
      });
      expect(await errorOf(batch, 429)).toMatch(/budget/);
      const failed = makeMessage(account.id, { createdAt: clock.now() });
      const entry = makeDlqEntry(failed, { createdAt: clock.now() });
      await t.ferry.driver.executor.dlqInsertMany({ entries: [entry] });
      const retry = await api(`/v2/dlq/retry/${entry.dlqId}`, { method: 'POST' });
      expect(await errorOf(retry, 429)).toMatch(/budget/);

      await admin.json(`/v2/queue/update-budget/${account.id}`, {
        method: 'PATCH',
        body: JSON.stringify({ budget: 0 }),
      });
      expect((await publish()).status).toBe(200);
    });

    it('rotate-token: the old token is refused by the very next request; nothing else changes', async () => {
      const account = await createQueueAccount(admin);
      const before = withToken(t.url, account.token);
      expect((await before('/v2/keys')).status).toBe(200); // cached now
      const rotated = await admin.json<Record<string, unknown>>(
        `/v2/queue/rotate-token/${account.id}`,
        { method: 'POST' },
      );
      expect(rotated.token).not.toBe(account.token);
      expect(rotated.password).not.toBe(account.password);
      expect({ ...rotated, password: '', token: '' }).toEqual({
        ...account,
        password: '',
        token: '',
      });
      expect((await before('/v2/keys')).status).toBe(401);
      const after = await withToken(t.url, rotated.token as string)('/v2/keys');
      expect(after.status).toBe(200);
    });

    it('delete: the token stops working and the account and its data are gone', async () => {
      const account = await createQueueAccount(admin, { type: 'paid' });
      const api = withToken(t.url, account.token);
      const sent = await api('/v2/publish/https://example.com/x', {
        method: 'POST',
        headers: { 'Svc-Delay': '1h' },
        body: 'x',
      });
      const { messageId } = (await sent.json()) as { messageId: string };
      const deleted = await admin.json(`/v2/queue/${account.id}`, { method: 'DELETE' });
      expect(deleted.id).toBe(account.id);
      expect((await api('/v2/keys')).status).toBe(401);
      expect((await admin.api(`/v2/queue/${account.id}`)).status).toBe(404);
      expect(
        await t.ferry.driver.executor.messageGet({ accountId: account.id, id: messageId }),
      ).toBeUndefined();
      expect((await admin.api(`/v2/queue/${account.id}`, { method: 'DELETE' })).status).toBe(404);
    });
  });

  describe('search indexes', () => {
    it('create, get, list, rename, reset-password and delete', async () => {
      const created = await admin.json<Record<string, unknown>>('/v2/search', {
        method: 'POST',
        body: JSON.stringify({ name: 'products', region: 'eu-west-1', type: 'payg' }),
      });
      expect(typesOf(created)).toEqual(INDEX_FIELDS);
      expect(created).toMatchObject({
        customer_id: admin.email,
        name: 'products',
        region: 'eu-west-1',
        type: 'payg',
        partner_email: '',
        max_monthly_reranks: -1,
        max_daily_updates: -1,
        max_daily_queries: -1,
        max_monthly_bandwidth: -1,
        creation_time: Math.floor(clock.now() / 1000),
        input_enrichment_enabled: false,
        throughput_vector: [],
      });
      expect(created.endpoint).toMatch(/^products-[0-9a-f]{10}$/);
      expect(created.token).not.toBe('');
      expect(created.read_only_token).not.toBe(created.token);

      const id = created.id as string;
      const read = await admin.json(`/v2/search/${id}`);
      expect(read).toEqual(created);
      expect(await admin.json('/v2/search')).toEqual([read]);

      const renamed = await admin.json(`/v2/search/${id}/rename`, {
        method: 'POST',
        body: JSON.stringify({ name: 'catalog' }),
      });
      expect(renamed).toEqual({ ...read, name: 'catalog' });

      const reset = await admin.json(`/v2/search/${id}/reset-password`, { method: 'POST' });
      expect(reset.token).not.toBe('');
      expect(reset.token).not.toBe(created.token);
      expect(reset.read_only_token).not.toBe(created.read_only_token);

      const free = await admin.json('/v2/search', {
        method: 'POST',
        body: JSON.stringify({ name: 'small', region: 'us-central1', type: 'free' }),
      });
      expect(free.max_monthly_reranks).toBeGreaterThan(0);

      expect((await admin.json(`/v2/search/${id}`, { method: 'DELETE' })).id).toBe(id);
      expect((await admin.api(`/v2/search/${id}`)).status).toBe(404);
    });

    it('throughput_vector shows the recorded request counts of the last hour', async () => {
      const created = await admin.json('/v2/search', {
        method: 'POST',
        body: JSON.stringify({ name: 'busy', region: 'eu-west-1', type: 'fixed' }),
      });
      const id = created.id as string;
      t.ferry.meter.add(id, 'index_requests', 7, clock.now() - 60_000);
      await t.ferry.meter.runOnce();
      const read = await admin.json<{ throughput_vector: { x: string; y: number }[] }>(
        `/v2/search/${id}`,
      );
      expect(read.throughput_vector).toHaveLength(60);
      expect(read.throughput_vector[58]).toEqual({ x: '2026-03-10 11:59:00 +0000 UTC', y: 7 });
      expect(read.throughput_vector.reduce((sum, p) => sum + p.y, 0)).toBe(7);
    });

    it('validates name, region and type, naming the field', async () => {
      const good = { name: 'ok', region: 'eu-west-1', type: 'free' };
      for (const [patch, field] of [
        [{ name: '' }, /name/],
        [{ name: 'has space' }, /name/],
        [{ name: 'x'.repeat(65) }, /name/],
        [{ region: 'eu-central-1' }, /region/],
        [{ type: 'paid' }, /type/],
        [{ region: undefined }, /region/],
      ] as const) {
        const res = await admin.api('/v2/search', {
          method: 'POST',
          body: JSON.stringify({ ...good, ...patch }),
        });
        expect(await errorOf(res, 400)).toMatch(field);
      }
    });
  });
});

describe('--mgmt-port', () => {
  it('serves the management API on its own port and not on the main one', async () => {
    const t = await startFerry({ engine: false, args: ['--mgmt-port', '0'] });
    try {
      expect(t.ferry.mgmtUrl).not.toBe(t.url);
      const admin = await createMgmtUser(t, true);
      expect(await admin.json('/v2/queue')).toEqual([]);
      const onMain = await fetch(`${t.url}/v2/queue`, {
        headers: { authorization: basic(admin.email, admin.apiKey) },
      });
      expect(onMain.status).toBe(404);
      const messaging = await fetch(`${t.ferry.mgmtUrl}/v2/keys`, {
        headers: { authorization: `Bearer ${t.token}` },
      });
      expect(messaging.status).toBe(404);
    } finally {
      await t.close();
    }
  });
});
