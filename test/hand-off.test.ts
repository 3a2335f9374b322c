/**
 * A publish due now goes to the engine without a claim: when the engine has a slot for it, the
 * message is stored leased to the engine and its delivery starts once the commit is made
 * (Engine.reserve / handOff; on PostgreSQL within max_global_parallelism, which
 * test/limits-nodes.test.ts holds across two nodes). These tests hold the parts a user relies on: such a message
 * is delivered once, with its events; no claim is needed for it; a publish whose commit fails
 * gives its slot back; and a message stored leased is delivered after a crash.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Driver } from '../src/storage/driver.js';
import { startFerry, STORAGES, type TestFerry } from './helpers/ferry.js';
import { startReceiver, type Receiver } from './helpers/receiver.js';
import { replacing, replacingAtRoot, wrapTransactions } from './helpers/wrap-driver.js';

/** The driver, counting the engine's claims that took messages. */
function countingClaims(counter: { taken: number }): (driver: Driver) => Driver {
  return (driver) =>
    replacingAtRoot(driver, 'messageClaimDueLimited', (claim) => async (p) => {
      const result = await claim(p);
      counter.taken += result.messages.length;
      return result;
    });
}

let t: TestFerry | undefined;
let dest: Receiver | undefined;

afterEach(async () => {
  await t?.close();
  t = undefined;
  await dest?.close();
  dest = undefined;
});

describe.each(STORAGES)('a publish handed to the engine (%s)', (storage) => {
  it('is delivered once, with its events, and no claim reads it back', async () => {
    const claims = { taken: 0 };
    t = await startFerry({ storage, wrapDriver: countingClaims(claims) });
    dest = await startReceiver();
    const ids: string[] = [];
    for (let i = 0; i < 10; i++) {
      const res = await t.api(`/v2/publish/${dest.url}/h`, { method: 'POST', body: `m${i}` });
      expect(res.status).toBe(200);
      ids.push(((await res.json()) as { messageId: string }).messageId);
      await dest.waitFor(i + 1, 10_000);
    }
    expect(dest.requests.map((r) => r.body.toString())).toEqual(ids.map((_, i) => `m${i}`));
    // On PostgreSQL a publish that finds the claim's lock busy (the engine's own periodic claim)
    // leaves its message to a claim rather than wait.
    expect(claims.taken).toBeLessThanOrEqual(storage === 'sqlite' ? 0 : 2);
    for (const id of ids) {
      const deadline = Date.now() + 10_000;
      let states: string[] = [];
      while (states.length < 3 && Date.now() < deadline) {
        const page = await t.api(`/v2/events?messageId=${id}`);
        states = ((await page.json()) as { events: { state: string }[] }).events.map(
          (e) => e.state,
        );
        if (states.length < 3) await new Promise((resolve) => setTimeout(resolve, 20)); // polling
      }
      expect(states).toEqual(['DELIVERED', 'ACTIVE', 'CREATED']);
    }
    // Nothing is left to deliver: no claim took a handed message after its delivery either.
    expect(dest.requests).toHaveLength(10);
  });

  it('delivers each of many concurrent publishes exactly once with one slot', async () => {
    t = await startFerry({ storage, args: ['--concurrency', '1'] });
    dest = await startReceiver();
    const api = t.api.bind(t);
    const url = dest.url;
    const sent = await Promise.all(
      Array.from({ length: 100 }, async (_, i) => {
        const res = await api(`/v2/publish/${url}/c`, { method: 'POST', body: `c${i}` });
        return res.status;
      }),
    );
    expect(sent.every((status) => status === 200)).toBe(true);
    await dest.waitFor(100, 20_000);
    const bodies = dest.requests.map((r) => r.body.toString()).sort();
    expect(bodies).toEqual(Array.from({ length: 100 }, (_, i) => `c${i}`).sort());
  });
});

describe('a publish whose commit fails (sqlite)', () => {
  it('gives the slot back when the publish fails to commit', async () => {
    // One slot: a reservation that leaked would leave the engine no room to deliver anything.
    let failNext = true;
    const failingOnce = (driver: Driver): Driver =>
      wrapTransactions(driver, (run) =>
        run((tx) =>
          replacing(tx, 'eventInsertMany', (insert) => async (params) => {
            if (failNext && params.events.some((e) => e.state === 'CREATED')) {
              failNext = false;
              throw new Error('injected: the publish transaction fails');
            }
            return insert(params);
          }),
        ),
      );
    t = await startFerry({ args: ['--concurrency', '1'], wrapDriver: failingOnce });
    dest = await startReceiver();
    const failed = await t.api(`/v2/publish/${dest.url}/f`, { method: 'POST', body: 'lost' });
    expect(failed.status).toBeGreaterThanOrEqual(500);
    const ok = await t.api(`/v2/publish/${dest.url}/f`, { method: 'POST', body: 'kept' });
    expect(ok.status).toBe(200);
    await dest.waitFor(1, 10_000);
    expect(dest.requests.map((r) => r.body.toString())).toEqual(['kept']);
  });
});

describe('a message stored leased to an engine that then dies (sqlite)', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it('is delivered by the next process, at once', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'ferry-handoff-'));
    dirs.push(dataDir);
    // The destination never answers: the first process holds the delivery when it is killed.
    const hanging = await startReceiver(() => ({ hang: true }));
    const main = new URL('../dist/cli/main.js', import.meta.url).pathname;
    const start = () =>
      spawn(process.execPath, [main, 'start', '--port', '0', '--data-dir', dataDir], {
        stdio: ['ignore', 'pipe', 'inherit'],
      });
    const ready = (proc: ReturnType<typeof start>) =>
      new Promise<string>((resolve, reject) => {
        let out = '';
        proc.stdout?.on('data', (d: Buffer) => {
          out += d.toString();
          const url = /running at (http:\/\/\S+)/.exec(out)?.[1];
          if (url) resolve(url);
        });
        proc.on('exit', (code) => reject(new Error(`ferry exited with ${code}`)));
      });
    const first = start();
    const base = await ready(first);
    const credentials = readFileSync(join(dataDir, 'credentials.json'), 'utf8');
    const bearer = (JSON.parse(credentials) as { token: string }).token;
    try {
      const res = await fetch(`${base}/v2/publish/${hanging.url}/x`, {
        method: 'POST',
        headers: { authorization: `Bearer ${bearer}` },
        body: 'held',
      });
      expect(res.status).toBe(200);
      await hanging.waitFor(1, 10_000);
      const exited = new Promise((resolve) => first.on('exit', resolve));
      first.kill('SIGKILL');
      await exited;
      hanging.respond(() => ({ status: 200 }));
      const second = start();
      try {
        await ready(second);
        // Delivered again at once: the lease was the dead process's, not the stored row's (its
        // 30 s would outlast the wait).
        await hanging.waitFor(2, 10_000);
        expect(hanging.requests[1]?.body.toString()).toBe('held');
      } finally {
        const stopped = new Promise((resolve) => second.on('exit', resolve));
        second.kill('SIGTERM');
        await stopped;
      }
    } finally {
      await hanging.close();
    }
  });
});
