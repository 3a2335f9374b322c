import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { WalSync } from './wal-sync.js';

const dir = mkdtempSync(join(tmpdir(), 'ferry-walsync-'));
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('WalSync', () => {
  it('shares one fsync among callers that arrive while it is not yet running', async () => {
    const path = join(dir, 'a-wal');
    writeFileSync(path, 'frames');
    const sync = new WalSync(path);
    const first = sync.sync();
    // Called while the first fsync runs: their commits may postdate its start, so they share
    // the next fsync, never the running one.
    const second = sync.sync();
    const third = sync.sync();
    expect(second).not.toBe(first);
    expect(third).toBe(second);
    await Promise.all([first, second, third]);
    // Idle again: a new caller starts a fresh fsync at once.
    const fourth = sync.sync();
    expect(fourth).not.toBe(second);
    await fourth;
    await sync.close();
  });

  it('rejects when the WAL file cannot be synced', async () => {
    const sync = new WalSync(join(dir, 'missing', 'x-wal'));
    await expect(sync.sync()).rejects.toThrow();
  });
});
