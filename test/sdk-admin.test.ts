/** The SDK's management client (`FerryAdmin`) against a real Ferry. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/core/clock.js';
import { FerryAdmin, FerryApiError, FerryClient } from '../src/sdk/index.js';
import { startFerry, type TestFerry } from './helpers/ferry.js';
import { createMgmtUser } from './helpers/mgmt.js';

let t: TestFerry;
let admin: FerryAdmin;
const clock = new ManualClock(Date.UTC(2026, 4, 20, 8, 30, 0));

beforeAll(async () => {
  t = await startFerry({ clock, engine: false });
  const user = await createMgmtUser(t, true);
  admin = new FerryAdmin({ baseUrl: t.ferry.mgmtUrl, email: user.email, apiKey: user.apiKey });
});
afterAll(async () => {
  await t.close();
});

describe('FerryAdmin', () => {
  it('manages an account from creation to deletion', async () => {
    const account = await admin.accounts.create({ type: 'paid', region: 'eu-central-1' });
    expect(account).toMatchObject({
      type: 'paid',
      region: 'eu-central-1',
      metrics_enabled: 'true',
    });
    const client = new FerryClient({ baseUrl: t.url, token: account.token });
    await client.publish({ destination: 'https://example.com/x', body: 'a' });
    await client.publish({ destination: 'https://example.com/x', body: 'b' });

    const stats = await admin.accounts.stats(account.id, '3h');
    expect(stats.daily_used).toHaveLength(60);
    expect(stats.daily_used[59]).toEqual({ x: '2026-05-20 08:28:00 +0000 UTC', y: 2 });
    expect(stats.days).toHaveLength(31);

    expect((await admin.accounts.setPlan(account.id, 'free')).type).toBe('free');
    expect((await admin.accounts.updateBudget(account.id, 7)).budget).toBe(7);
    expect(await admin.accounts.list()).toEqual([await admin.accounts.get(account.id)]);

    const rotated = await admin.accounts.rotateToken(account.id);
    await expect(client.keys.get()).rejects.toMatchObject({ status: 401 });
    const renewed = new FerryClient({ baseUrl: t.url, token: rotated.token });
    expect((await renewed.keys.get()).current).toBeTruthy();

    expect((await admin.accounts.delete(account.id)).id).toBe(account.id);
    const missing = await admin.accounts.get(account.id).catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(FerryApiError);
    expect(missing).toMatchObject({ status: 404 });
  });

  it('manages search indexes', async () => {
    const index = await admin.search.create({ name: 'docs', region: 'us-central1', type: 'free' });
    expect(index.token).not.toBe('');
    expect((await admin.search.rename(index.id, 'documents')).name).toBe('documents');
    const reset = await admin.search.resetPassword(index.id);
    expect(reset.token).not.toBe(index.token);
    expect((await admin.search.list()).map((i) => i.id)).toEqual([index.id]);
    expect((await admin.search.get(index.id)).throughput_vector).toEqual([]);
    await admin.search.delete(index.id);
    await expect(admin.search.get(index.id)).rejects.toMatchObject({ status: 404 });
  });

  it('creates users as an administrator; bad credentials are a 401', async () => {
    const created = await admin.createUser('carol@example.com');
    const carol = new FerryAdmin({
      baseUrl: t.ferry.mgmtUrl,
      email: created.email,
      apiKey: created.api_key,
    });
    expect(await carol.accounts.list()).toEqual([]);
    await expect(carol.createUser('dave@example.com')).rejects.toMatchObject({ status: 403 });
    const wrong = new FerryAdmin({ baseUrl: t.ferry.mgmtUrl, email: created.email, apiKey: 'x' });
    await expect(wrong.accounts.list()).rejects.toMatchObject({ status: 401 });
  });
});
