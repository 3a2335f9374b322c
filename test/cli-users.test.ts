/**
 * The management side of the command line: `ferry users create` against the data directory, and
 * a credentials.json from before the management API gaining the administrator at the next start.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createAccount } from '../src/cli/credentials.js';
import { openSqliteDriver } from '../src/storage/sqlite/sqlite-driver.js';
import { basic } from './helpers/mgmt.js';
import { MAIN, assertBuilt, startFerryProcess } from './helpers/process.js';

let dataDir: string;
beforeEach(() => {
  dataDir = mkdtempSync(join(tmpdir(), 'ferry-cli-users-'));
});
afterEach(() => rmSync(dataDir, { recursive: true, force: true }));

const ferry = (...args: string[]) =>
  spawnSync(process.execPath, [MAIN, ...args], { encoding: 'utf8', timeout: 30_000 });

describe('ferry users create', () => {
  it('creates a user in the data directory (server not running) and prints its key once', async () => {
    assertBuilt();
    const made = ferry('users', 'create', '--email', 'Ops@Example.com', '--data-dir', dataDir);
    expect(made.status, made.stderr).toBe(0);
    const printed = JSON.parse(made.stdout) as { email: string; api_key: string };
    expect(Object.keys(printed).sort()).toEqual(['api_key', 'email']);
    expect(printed.email).toBe('ops@example.com');

    const again = ferry('users', 'create', '--email', 'ops@example.com', '--data-dir', dataDir);
    expect(again.status).toBe(2);
    expect(again.stderr).toMatch(/already exists/);
    const bad = ferry('users', 'create', '--email', 'nope', '--data-dir', dataDir);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/email/);
    expect(ferry('users', 'create', '--data-dir', dataDir).stderr).toMatch(/--email/);

    const f = await startFerryProcess({ dataDir });
    try {
      const res = await fetch(`${f.credentials.mgmtUrl}/v2/queue`, {
        headers: { authorization: basic(printed.email, printed.api_key) },
      });
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual([]);
      // SQLite's file belongs to the running server: the command says how to go through it.
      const busy = ferry('users', 'create', '--email', 'late@example.com', '--data-dir', dataDir);
      expect(busy.status).toBe(1);
      expect(busy.stderr).toMatch(/in use by another Ferry process.*POST \/v2\/admin\/users/);
    } finally {
      await f.kill('SIGTERM');
    }
  });
});

describe('credentials.json from an earlier version', () => {
  it('gains mgmtUrl, email and apiKey; the administrator owns the default account', async () => {
    const driver = openSqliteDriver({ path: join(dataDir, 'ferry.db') });
    await driver.migrate();
    const { account, token } = await createAccount({
      executor: driver.executor,
      plan: 'paid',
      now: Date.now(),
    });
    await driver.close();
    const old = {
      baseUrl: 'http://127.0.0.1:1',
      token,
      currentSigningKey: account.currentSigningKey,
      nextSigningKey: account.nextSigningKey,
      accountId: account.id,
    };
    writeFileSync(join(dataDir, 'credentials.json'), JSON.stringify(old));

    const f = await startFerryProcess({ dataDir });
    try {
      const creds = f.credentials;
      expect(creds).toMatchObject({ token, accountId: account.id });
      expect(creds.email).toBe('admin@ferry.local');
      expect(creds.mgmtUrl).toBe(creds.baseUrl);
      const res = await fetch(`${creds.mgmtUrl}/v2/queue`, {
        headers: { authorization: basic(creds.email, creds.apiKey) },
      });
      const accounts = (await res.json()) as { id: string }[];
      expect(accounts.map((a) => a.id)).toEqual([account.id]);
    } finally {
      await f.kill('SIGTERM');
    }
    const saved = JSON.parse(readFileSync(join(dataDir, 'credentials.json'), 'utf8')) as object;
    expect(Object.keys(saved)).toEqual(expect.arrayContaining(['mgmtUrl', 'email', 'apiKey']));
  });
});
