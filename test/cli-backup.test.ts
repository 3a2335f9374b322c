/**
 * `ferry backup` while the server publishes and delivers, then `ferry restore` into a new data
 * directory and a Ferry started on it: every message acknowledged before the backup began is
 * there, and the copy holds no message that was never acknowledged.
 */
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runCli } from './helpers/cli.js';
import { basic } from './helpers/mgmt.js';
import { startFerryProcess, type FerryProcess } from './helpers/process.js';
import { startReceiver } from './helpers/receiver.js';

let dir: string;
const running: FerryProcess[] = [];
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'ferry-backup-'));
});
afterEach(async () => {
  for (const f of running.splice(0)) await f.kill('SIGTERM');
  rmSync(dir, { recursive: true, force: true });
});

interface Acked {
  id: string;
  /** When the acknowledgement arrived, ms. */
  at: number;
}

describe('ferry backup and restore', { timeout: 180_000 }, () => {
  it('copies a running server under load; the restored server has every acknowledged message', async () => {
    const dataDir = join(dir, 'live');
    const ferry = await startFerryProcess({ dataDir });
    running.push(ferry);
    const { baseUrl, token } = ferry.credentials;
    const dest = await startReceiver();
    const publish = async (path: string, delay?: string): Promise<Acked> => {
      const res = await fetch(`${baseUrl}/v2/publish/${dest.url}/${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, ...(delay ? { 'Svc-Delay': delay } : {}) },
        body: 'x'.repeat(2_000),
      });
      expect(res.status).toBe(200);
      return { id: ((await res.json()) as { messageId: string }).messageId, at: Date.now() };
    };

    // Delayed messages stay stored; immediate ones keep the delivery engine busy.
    const acked: Acked[] = [];
    for (let i = 0; i < 200; i++) acked.push(await publish('later', '1h'));
    let loading = true;
    const load = (async () => {
      for (let i = 0; loading; i++) {
        const batch = await Promise.all([publish('later', '1h'), publish(`now/${i}`)]);
        acked.push(batch[0]);
      }
    })();

    const file = join(dir, 'ferry-backup.db');
    const startedAt = Date.now();
    const deliveredBefore = dest.requests.length;
    const backup = await runCli(['backup', file, '--data-dir', dataDir, '--json']);
    const endedAt = Date.now();
    loading = false;
    await load;
    expect(backup.status, backup.stderr).toBe(0);
    expect(JSON.parse(backup.stdout)).toMatchObject({ file, schemaVersion: expect.any(Number) });
    expect(statSync(file).mode & 0o777).toBe(0o600);
    // The server kept acknowledging and delivering while the backup ran.
    const ackedDuring = acked.filter((a) => a.at > startedAt && a.at < endedAt).length;
    expect(ackedDuring).toBeGreaterThan(0);
    expect(dest.requests.filter((r) => r.at > startedAt && r.at < endedAt).length).toBeGreaterThan(
      0,
    );
    expect(dest.requests.length).toBeGreaterThan(deliveredBefore);
    await ferry.kill('SIGTERM');
    running.pop();

    const restoredDir = join(dir, 'restored');
    const restore = await runCli([
      'restore',
      file,
      '--data-dir',
      restoredDir,
      '--credentials',
      join(dataDir, 'credentials.json'),
      '--secret-key-file',
      join(dataDir, 'secret.key'),
    ]);
    expect(restore.status, restore.stderr).toBe(0);
    expect(restore.stderr).toBe('');
    // Without the key file the command says what the start would lose.
    const keyless = await runCli(['restore', file, '--data-dir', join(dir, 'keyless')]);
    expect(keyless.status, keyless.stderr).toBe(0);
    expect(keyless.stderr).toMatch(/no secret\.key in .*--secret-key-file/);
    expect(existsSync(join(restoredDir, 'ferry.db-wal'))).toBe(false);
    const again = await runCli(['restore', file, '--data-dir', restoredDir]);
    expect(again.status).toBe(2);
    expect(again.stderr).toMatch(/exists; pass --force/);

    const restored = await startFerryProcess({ dataDir: restoredDir });
    running.push(restored);
    expect(restored.credentials.token).toBe(token);
    expect(restored.output()).toContain('Using the default account');
    // The stored credentials open with the restored key: the management API shows the token.
    const { mgmtUrl, email, apiKey } = restored.credentials;
    const accounts = (await (
      await fetch(`${mgmtUrl}/v2/queue`, { headers: { authorization: basic(email, apiKey) } })
    ).json()) as { token: string }[];
    expect(accounts.map((a) => a.token)).toContain(token);
    const stored = async (id: string): Promise<boolean> => {
      const res = await fetch(`${restored.credentials.baseUrl}/v2/messages/${id}`, {
        headers: { authorization: `Bearer ${token}` },
      });
      return res.status === 200;
    };
    const before = acked.filter((a) => a.at <= startedAt);
    const missing: string[] = [];
    for (const a of before) if (!(await stored(a.id))) missing.push(a.id);
    expect(missing).toEqual([]);
    expect(before.length).toBeGreaterThanOrEqual(200);

    // Nothing in the copy that was never acknowledged (the delayed messages all come from `acked`).
    const listed = new Set<string>();
    let cursor: string | undefined;
    do {
      const res = await fetch(
        `${restored.credentials.baseUrl}/v2/events?state=CREATED&count=100${cursor ? `&cursor=${cursor}` : ''}`,
        { headers: { authorization: `Bearer ${token}` } },
      );
      const page = (await res.json()) as {
        cursor?: string;
        events: { messageId: string; url: string }[];
      };
      for (const e of page.events) if (e.url.endsWith('/later')) listed.add(e.messageId);
      cursor = page.cursor || undefined;
    } while (cursor);
    const ackedIds = new Set(acked.map((a) => a.id));
    expect([...listed].filter((id) => !ackedIds.has(id))).toEqual([]);
    await dest.close();
  });

  it('refuses to restore over a database a running Ferry holds', async () => {
    const dataDir = join(dir, 'live');
    const ferry = await startFerryProcess({ dataDir });
    running.push(ferry);
    const file = join(dir, 'copy.db');
    expect((await runCli(['backup', file, '--data-dir', dataDir])).status).toBe(0);
    const res = await runCli(['restore', file, '--data-dir', dataDir, '--force']);
    expect(res.status).toBe(2);
    expect(res.stderr).toMatch(/is in use/);
    const notFerry = await runCli([
      'restore',
      join(dataDir, 'credentials.json'),
      '--data-dir',
      join(dir, 'x'),
    ]);
    expect(notFerry.status).toBe(2);
    expect(notFerry.stderr).toMatch(/^ferry: .*credentials\.json/);
  });

  it('names --data-dir and the reason when it cannot create the directory', async () => {
    const dataDir = join(dir, 'source');
    const ferry = await startFerryProcess({ dataDir });
    running.push(ferry);
    const file = join(dir, 'for-nowhere.db');
    expect((await runCli(['backup', file, '--data-dir', dataDir])).status).toBe(0);
    const underFile = join(file, 'restored');
    const res = await runCli(['restore', file, '--data-dir', underFile]);
    expect(res.status).toBe(1);
    expect(res.stderr).toBe(
      `ferry: cannot create the data directory ${underFile} (--data-dir): not a directory (ENOTDIR)\n`,
    );
    // procfs answers ENOENT to a mkdir: Node's recursive mkdir looped on it forever.
    const proc = await runCli(['restore', file, '--data-dir', '/proc/ferry-restore-test']);
    expect(proc.status).toBe(1);
    expect(proc.stderr).toBe(
      'ferry: cannot create the data directory /proc/ferry-restore-test (--data-dir): no such file or directory (ENOENT)\n',
    );
  });
});
