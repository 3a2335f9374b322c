/**
 * Credentials the management API shows again (issue 14): an account's `password`/`token` and a
 * search index's `token`/`read_only_token` come back on every read, stored sealed (AES-256-GCM)
 * beside the hashes authentication uses; rows from before the secret key show "" until reset.
 */
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { credentialsPath, ensureDefaultAccount } from '../src/cli/credentials.js';
import { ManualClock, systemClock } from '../src/core/clock.js';
import { silentLogger } from '../src/core/logger.js';
import type { SearchIndex } from '../src/core/management.js';
import { SecretBox } from '../src/core/secret-box.js';
import { hashPassword } from '../src/core/token.js';
import { createAccount } from '../src/engine/account-factory.js';
import { STORAGES, startFerry, type TestFerry } from './helpers/ferry.js';
import { createMgmtUser, createQueueAccount, withToken, type MgmtUser } from './helpers/mgmt.js';

type Json = Record<string, unknown>;

describe.each(STORAGES)('on %s', (storage) => {
  let t: TestFerry;
  let admin: MgmtUser;
  let ownerId: string;

  beforeEach(async () => {
    t = await startFerry({
      clock: new ManualClock(Date.UTC(2026, 2, 10, 12)),
      engine: false,
      storage,
    });
    admin = await createMgmtUser(t, true);
    const user = await t.ferry.driver.executor.userGetByEmail({ email: admin.email });
    ownerId = user?.id ?? '';
  });
  afterEach(async () => {
    await t.close();
  });

  it('GET /v2/queue/{id} and the account list show the credentials, sealed at rest', async () => {
    const account = await createQueueAccount(admin);
    const password = account.password as string;
    expect(password).not.toBe('');
    const read = await admin.json(`/v2/queue/${account.id}`);
    expect(read.password).toBe(password);
    expect(read.token).toBe(account.token);
    const listed = await admin.json<Json[]>('/v2/queue');
    expect(listed.find((a) => a.id === account.id)?.token).toBe(account.token);
    // The token read back works.
    expect((await withToken(t.url, read.token as string)('/v2/keys')).status).toBe(200);

    const row = await t.ferry.driver.executor.accountGet({ id: account.id });
    expect(row?.passwordHash).toBe(hashPassword(password));
    expect(row?.passwordSealed).toMatch(/^v1\./);
    expect(row?.passwordSealed).not.toContain(password);
    // Another key cannot open it.
    const stranger = new SecretBox(randomBytes(32));
    expect(stranger.open(row?.passwordSealed ?? '', `account-password:${account.id}`)).toBe(
      undefined,
    );
  });

  it('rotate-token: later reads show the new credentials', async () => {
    const account = await createQueueAccount(admin);
    const rotated = await admin.json(`/v2/queue/rotate-token/${account.id}`, { method: 'POST' });
    expect(rotated.token).not.toBe(account.token);
    const read = await admin.json(`/v2/queue/${account.id}`);
    expect([read.password, read.token]).toEqual([rotated.password, rotated.token]);
  });

  it('an account from before the secret key shows "" until its token is reset', async () => {
    // As migration 010 leaves it: the hash only, no sealed password.
    const { account } = await createAccount({
      executor: t.ferry.driver.executor,
      plan: 'paid',
      now: Date.now(),
      ownerId,
    });
    const read = await admin.json(`/v2/queue/${account.id}`);
    expect([read.password, read.token]).toEqual(['', '']);
    const rotated = await admin.json(`/v2/queue/rotate-token/${account.id}`, { method: 'POST' });
    const again = await admin.json(`/v2/queue/${account.id}`);
    expect([again.password, again.token]).toEqual([rotated.password, rotated.token]);
    expect(again.token).not.toBe('');
  });

  it('the default account of credentials.json gets its password sealed at the next start', async () => {
    const executor = t.ferry.driver.executor;
    const legacy = await createAccount({ executor, plan: 'paid', now: Date.now(), ownerId });
    const file = { token: legacy.token, email: admin.email, apiKey: admin.apiKey };
    writeFileSync(credentialsPath(t.config.dataDir), JSON.stringify(file));
    const start = (): ReturnType<typeof ensureDefaultAccount> =>
      ensureDefaultAccount({
        dataDir: t.config.dataDir,
        baseUrl: t.url,
        mgmtUrl: t.url,
        plan: 'paid',
        executor,
        accounts: t.ferry.accounts,
        clock: systemClock,
        logger: silentLogger,
        secrets: t.ferry.secrets,
      });
    const { account, created } = await start();
    expect([account.id, created]).toEqual([legacy.account.id, false]);
    const read = await admin.json(`/v2/queue/${legacy.account.id}`);
    expect([read.password, read.token]).toEqual([legacy.password, legacy.token]);
    // The next start finds it sealed and leaves it be.
    const sealed = (await executor.accountGet({ id: legacy.account.id }))?.passwordSealed;
    await start();
    expect((await executor.accountGet({ id: legacy.account.id }))?.passwordSealed).toBe(sealed);
  });

  it('a password sealed under another key shows "" (the key was changed), not a 500', async () => {
    const { account } = await createAccount({
      executor: t.ferry.driver.executor,
      plan: 'paid',
      now: Date.now(),
      ownerId,
      secrets: new SecretBox(randomBytes(32)),
    });
    const res = await admin.api(`/v2/queue/${account.id}`);
    expect(res.status).toBe(200);
    const read = (await res.json()) as Json;
    expect([read.password, read.token]).toEqual(['', '']);
  });

  it('GET /v2/search/{id} and the index list show both tokens; reset-password replaces them', async () => {
    const created = await admin.json('/v2/search', {
      method: 'POST',
      body: JSON.stringify({ name: 'products', region: 'eu-west-1', type: 'payg' }),
    });
    const id = created.id as string;
    const read = await admin.json(`/v2/search/${id}`);
    expect(read.token).not.toBe('');
    expect([read.token, read.read_only_token]).toEqual([created.token, created.read_only_token]);
    const [listed] = await admin.json<Json[]>('/v2/search');
    expect(listed?.read_only_token).toBe(created.read_only_token);

    const row = await t.ferry.driver.executor.searchIndexGet({ ownerId, id });
    expect(row?.tokenHash).toBe(hashPassword(created.token as string));
    expect(row?.tokenSealed).not.toContain(created.token as string);
    expect(row?.readOnlyTokenSealed).toMatch(/^v1\./);

    const reset = await admin.json(`/v2/search/${id}/reset-password`, { method: 'POST' });
    expect(reset.token).not.toBe(created.token);
    const after = await admin.json(`/v2/search/${id}`);
    expect([after.token, after.read_only_token]).toEqual([reset.token, reset.read_only_token]);
  });

  it('a search index from before the secret key shows "" until reset-password', async () => {
    const index: SearchIndex = {
      id: 'idx-legacy',
      ownerId,
      name: 'legacy',
      endpoint: 'legacy-0123456789',
      type: 'free',
      region: 'us-central1',
      tokenHash: hashPassword('old-token'),
      readOnlyTokenHash: hashPassword('old-read-only-token'),
      createdAt: Date.now(),
    };
    await t.ferry.driver.executor.searchIndexInsert({ index });
    const read = await admin.json(`/v2/search/${index.id}`);
    expect([read.token, read.read_only_token]).toEqual(['', '']);
    const reset = await admin.json(`/v2/search/${index.id}/reset-password`, { method: 'POST' });
    const after = await admin.json(`/v2/search/${index.id}`);
    expect([after.token, after.read_only_token]).toEqual([reset.token, reset.read_only_token]);
    expect(after.token).not.toBe('');
  });
});
