/** `ferry start` as a user runs it: credentials, settings, graceful stop, restart. */
import {
  chmodSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Receiver as UpstashReceiver } from '@upstash/qstash';
import { spawnCli } from './helpers/cli.js';
import { MAIN, assertBuilt, startFerryProcess } from './helpers/process.js';
import { startReceiver } from './helpers/receiver.js';

const { version } = JSON.parse(
  readFileSync(new URL('../package.json', import.meta.url), 'utf8'),
) as { version: string };

let dataDir: string;
beforeEach(() => {
  dataDir = mkdtempSync(join(tmpdir(), 'ferry-cli-'));
});
afterEach(() => rmSync(dataDir, { recursive: true, force: true }));

describe('ferry start', () => {
  it('creates credentials.json (0600) at first start, reuses it later, and stops cleanly on SIGTERM', async () => {
    const first = await startFerryProcess({ dataDir });
    const creds = first.credentials;
    expect(Object.keys(creds).sort()).toEqual([
      'accountId',
      'apiKey',
      'baseUrl',
      'currentSigningKey',
      'email',
      'mgmtUrl',
      'nextSigningKey',
      'token',
    ]);
    expect(creds.mgmtUrl).toBe(creds.baseUrl);
    expect(first.output()).toContain(creds.apiKey);
    expect(creds.baseUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(creds.baseUrl).not.toMatch(/:0$/);
    expect(statSync(join(dataDir, 'credentials.json')).mode & 0o777).toBe(0o600);
    expect(first.output()).toContain(creds.token);
    expect(first.output()).toContain('development');
    expect(first.output()).toContain(`  version:  ${version}\n`);

    const dest = await startReceiver();
    const res = await fetch(`${creds.baseUrl}/v2/publish/${dest.url}/hello`, {
      method: 'POST',
      headers: { authorization: `Bearer ${creds.token}`, 'content-type': 'text/plain' },
      body: 'hi',
    });
    expect(res.status).toBe(200);
    const [req] = await dest.waitFor(1);
    expect(req?.body.toString()).toBe('hi');

    expect(await first.kill('SIGTERM')).toBe(0);
    const second = await startFerryProcess({ dataDir });
    expect(second.credentials.token).toBe(creds.token);
    expect(second.credentials.accountId).toBe(creds.accountId);
    expect(second.credentials.email).toBe(creds.email);
    expect(second.credentials.apiKey).toBe(creds.apiKey);
    expect(second.output()).toContain('Using the default account');
    expect(await second.kill('SIGINT')).toBe(0);
    await dest.close();
  });

  it('creates the data dir 0700 and its files 0600; prints secrets only at the start that made them', async () => {
    const dir = join(dataDir, 'fresh');
    const first = await startFerryProcess({ dataDir: dir });
    const creds = first.credentials;
    const res = await fetch(`${creds.baseUrl}/v2/publish/https://example.com/x`, {
      method: 'POST',
      headers: { authorization: `Bearer ${creds.token}`, 'Svc-Delay': '1h' },
      body: 'stored',
    });
    expect(res.status).toBe(200);
    const modeOf = (name: string): number => statSync(join(dir, name)).mode & 0o777;
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    for (const file of ['ferry.db', 'ferry.db-wal', 'credentials.json', 'secret.key']) {
      expect([file, modeOf(file)]).toEqual([file, 0o600]);
    }
    for (const secret of [creds.token, creds.currentSigningKey, creds.apiKey]) {
      expect(first.output()).toContain(secret);
    }
    expect(await first.kill('SIGTERM')).toBe(0);

    // Files left 0644 by an earlier version are tightened at the next start.
    for (const file of readdirSync(dir)) chmodSync(join(dir, file), 0o644);
    const second = await startFerryProcess({ dataDir: dir });
    expect(modeOf('ferry.db')).toBe(0o600);
    if (existsSync(join(dir, 'ferry.db-wal'))) expect(modeOf('ferry.db-wal')).toBe(0o600);
    const output = second.output();
    for (const secret of [
      creds.token,
      creds.currentSigningKey,
      creds.nextSigningKey,
      creds.apiKey,
    ]) {
      expect(output).not.toContain(secret);
    }
    expect(output).toContain(join(dir, 'credentials.json'));
    expect(output).toContain(`Using the default account ${creds.accountId}`);
    expect(await second.kill('SIGTERM')).toBe(0);
  });

  it('takes settings from the environment: Upstash prefix, free plan, production mode', async () => {
    const f = await startFerryProcess({
      dataDir,
      args: ['--plan', 'free'],
      env: { FERRY_HEADER_PREFIX: 'Upstash', FERRY_ENV: 'production' },
    });
    const { baseUrl, token } = f.credentials;
    const refused = await fetch(`${baseUrl}/v2/publish/http://127.0.0.1:9/x`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}` },
    });
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { error: string }).error).toMatch(/private or loopback/);
    const tooMany = await fetch(`${baseUrl}/v2/publish/https://example.com`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'Upstash-Retries': '10' },
    });
    expect(tooMany.status).toBe(412);
    expect(f.output()).toContain('production');
    expect(await f.kill('SIGTERM')).toBe(0);
  });

  it('signs deliveries so that the official @upstash/qstash Receiver verifies them in Upstash mode', async () => {
    const f = await startFerryProcess({ dataDir, args: ['--header-prefix', 'Upstash'] });
    const { baseUrl, currentSigningKey, nextSigningKey } = f.credentials;
    const dest = await startReceiver();
    const res = await fetch(`${baseUrl}/v2/publish/${dest.url}/up?x=1`, {
      method: 'POST',
      headers: { authorization: `Bearer ${f.credentials.token}`, 'Upstash-Forward-A': 'b' },
      body: '{"hello":"world"}',
    });
    expect(res.status).toBe(200);
    const [req] = await dest.waitFor(1);
    expect(req?.headers['upstash-message-id']).toMatch(/^msg_/);
    expect(req?.headers['a']).toBe('b');
    const receiver = new UpstashReceiver({ currentSigningKey, nextSigningKey });
    await expect(
      receiver.verify({
        signature: req?.headers['upstash-signature'] as string,
        body: req?.body.toString() ?? '',
        url: req?.url,
      }),
    ).resolves.toBe(true);
    const qstashToken = await fetch(
      `${baseUrl}/v2/events?qstash_token=${encodeURIComponent(f.credentials.token)}`,
    );
    expect(qstashToken.status).toBe(200);
    expect(await f.kill('SIGTERM')).toBe(0);
    await dest.close();
  });

  it('listening on every address, gives a loopback URL to connect to; a busy port names its flag', async () => {
    const f = await startFerryProcess({ dataDir, args: ['--host', '0.0.0.0'] });
    const { baseUrl, token } = f.credentials;
    expect(baseUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(f.output()).toContain(`Ferry is running at ${baseUrl}`);
    const events = await fetch(`${baseUrl}/v2/events`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(events.status).toBe(200);

    const port = new URL(baseUrl).port;
    const other = mkdtempSync(join(tmpdir(), 'ferry-cli-'));
    try {
      const busy = spawnSync(
        process.execPath,
        [MAIN, 'start', '--port', port, '--data-dir', other, '--log-level', 'warn'],
        { encoding: 'utf8' },
      );
      expect(busy.status).toBe(2);
      expect(busy.stderr).toMatch(
        new RegExp(`--port/FERRY_PORT: port ${port} on 127\\.0\\.0\\.1 is already in use`),
      );
    } finally {
      rmSync(other, { recursive: true, force: true });
    }
    expect(await f.kill('SIGTERM')).toBe(0);
  });

  it('names the data directory it cannot create, in one line with status 1', () => {
    const file = join(dataDir, 'a-file');
    writeFileSync(file, '');
    const res = spawnSync(process.execPath, [MAIN, 'start', '--data-dir', join(file, 'ferry')], {
      encoding: 'utf8',
    });
    expect(res.status).toBe(1);
    expect(res.stderr).toBe(
      `ferry: cannot create the data directory ${join(file, 'ferry')} (--data-dir): not a directory (ENOTDIR)\n`,
    );
    // procfs answers ENOENT to a mkdir: Node's recursive mkdir looped on it forever.
    const proc = spawnSync(process.execPath, [MAIN, 'start', '--data-dir', '/proc/ferry-test'], {
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(proc.status).toBe(1);
    expect(proc.stderr).toBe(
      'ferry: cannot create the data directory /proc/ferry-test (--data-dir): no such file or directory (ENOENT)\n',
    );
  });

  it('ferry logs --follow waits out a restart of the server and goes on where it was', async () => {
    const dest = await startReceiver();
    const first = await startFerryProcess({ dataDir });
    const { baseUrl, token } = first.credentials;
    const publish = async (path: string): Promise<string> => {
      const res = await fetch(`${baseUrl}/v2/publish/${dest.url}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}` },
        body: 'x',
      });
      return ((await res.json()) as { messageId: string }).messageId;
    };
    const follow = spawnCli(['logs', '--follow', '--url', baseUrl, '--token', token]);
    try {
      await follow.waitFor('TIME');
      const before = await publish('/before');
      await follow.waitFor(`${before}  DELIVERED`);
      expect(await first.kill('SIGTERM')).toBe(0);
      await follow.waitFor(
        'ferry: the server does not answer (ECONNREFUSED); waiting for it\n',
        20_000,
        'stderr',
      );
      // The same data directory on the same port: the server back after a restart.
      const second = await startFerryProcess({
        dataDir,
        args: ['--port', new URL(baseUrl).port],
      });
      try {
        await follow.waitFor('ferry: the server answers again\n', 20_000, 'stderr');
        const after = await publish('/after');
        await follow.waitFor(`${after}  DELIVERED`);
        // Nothing printed twice, and the outage said once each way.
        expect(follow.output().split(`${before}  DELIVERED`)).toHaveLength(2);
        expect(follow.errors()).toBe(
          'ferry: the server does not answer (ECONNREFUSED); waiting for it\n' +
            'ferry: the server answers again\n',
        );
        expect(await follow.stop('SIGINT')).toBe(0);
      } finally {
        await second.kill('SIGTERM');
      }
    } finally {
      await follow.stop();
      await dest.close();
    }
  });

  it('ferry --version and -V print the version from package.json, status 0', () => {
    assertBuilt();
    for (const flag of ['--version', '-V']) {
      const proc = spawnSync(process.execPath, [MAIN, flag], { encoding: 'utf8' });
      expect(proc.status).toBe(0);
      expect(proc.stdout).toBe(`${version}\n`);
      expect(proc.stderr).toBe('');
    }
  });

  it('rejects an unknown option or a bad value with a message and status 2', () => {
    assertBuilt();
    const unknown = spawnSync(process.execPath, [MAIN, 'start', '--colour', 'blue'], {
      encoding: 'utf8',
    });
    expect(unknown.status).toBe(2);
    expect(unknown.stderr).toMatch(/unknown option --colour/);
    const bad = spawnSync(process.execPath, [MAIN, 'start', '--port', 'eighty'], {
      encoding: 'utf8',
    });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/--port\/FERRY_PORT/);
    const noKey = spawnSync(
      process.execPath,
      [MAIN, 'start', '--data-dir', dataDir, '--database-url', 'postgres://127.0.0.1:1/x'],
      { encoding: 'utf8', env: { ...process.env, FERRY_SECRET_KEY: '' } },
    );
    expect(noKey.status).toBe(2);
    expect(noKey.stderr).toMatch(/--secret-key\/FERRY_SECRET_KEY is required with PostgreSQL/);
    const badKey = spawnSync(process.execPath, [MAIN, 'start', '--secret-key', 'hunter2'], {
      encoding: 'utf8',
    });
    expect(badKey.status).toBe(2);
    expect(badKey.stderr).toMatch(/--secret-key\/FERRY_SECRET_KEY must be 32 bytes/);
    expect(badKey.stderr).not.toContain('hunter2');
    const typo = spawnSync(process.execPath, [MAIN, 'start', '--data-dir', dataDir], {
      encoding: 'utf8',
      env: { ...process.env, FERRY_ENV: 'prod' },
    });
    expect(typo.status).toBe(2);
    expect(typo.stderr).toMatch(/--production\/FERRY_ENV must be one of production, true, 1/);
    const split = spawnSync(
      process.execPath,
      [MAIN, 'start', '--data-dir', dataDir, '--roles', 'api'],
      {
        encoding: 'utf8',
      },
    );
    expect(split.status).toBe(2);
    expect(split.stderr).toMatch(/--roles\/FERRY_ROLES: with SQLite one process runs every role/);
    const help = spawnSync(process.execPath, [MAIN, '--help'], { encoding: 'utf8' });
    expect(help.status).toBe(0);
    expect(help.stdout).toMatch(/--database-url/);
  });
});
