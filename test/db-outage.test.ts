/**
 * The database goes away: a PostgreSQL cluster of the test's own (initdb and pg_ctl in a temp
 * directory, so the shared server is untouched) is stopped in the middle of a publish load and
 * started again, then frozen (SIGSTOP: open connections that no longer answer, as with a hung
 * host or a network partition) for longer than Ferry's deadline and thawed. Throughout, publishes
 * are answered 503 with Retry-After within a few seconds (never a 500, never a hang), each saying
 * whether the message may have been stored, and /ready says so; once the server is back,
 * deliveries resume on their own, every acknowledged message is delivered, and no publish
 * answered "nothing was stored" is.
 */
import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import { chownSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { startFerryProcess, type FerryProcess } from './helpers/process.js';
import { startReceiver, type Receiver } from './helpers/receiver.js';

/** The newest installed PostgreSQL's bin directory, or undefined. */
function pgBin(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, 'bin', 'pg_ctl')))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] ? join(root, versions[0], 'bin') : undefined;
}

const bin = pgBin();
// initdb refuses to run as root: as root, the cluster runs as the `postgres` system user.
const asRoot = userInfo().uid === 0;
const runAs = asRoot
  ? (() => {
      try {
        return Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
      } catch {
        return undefined;
      }
    })()
  : userInfo().uid;
const skipReason = !bin
  ? 'no PostgreSQL binaries under /usr/lib/postgresql/*/bin'
  : runAs === undefined
    ? 'running as root and there is no postgres user to run initdb as'
    : undefined;
if (skipReason) console.log(`db-outage.test.ts skipped: ${skipReason}`);

/**
 * Runs one of PostgreSQL's tools. Asynchronous on purpose: `pg_ctl -w` waits seconds for the
 * server, and a blocked event loop would stall the publishers' requests and add that wait to the
 * answer times the test measures.
 */
async function pg(tool: string, args: string[]): Promise<void> {
  const path = join(bin as string, tool);
  const [cmd, full] = asRoot ? ['runuser', ['-u', 'postgres', '--', path, ...args]] : [path, args];
  await promisify(execFile)(cmd, full);
}

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as { port: number };
  await new Promise((r) => s.close(r));
  return port;
}

describe.skipIf(skipReason !== undefined)('PostgreSQL restarted under load', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ferry-pg-'));
  const data = join(dir, 'data');
  let port = 0;
  let t: FerryProcess | undefined;
  let receiver: Receiver | undefined;
  const start = () =>
    pg('pg_ctl', [
      '-D',
      data,
      '-l',
      join(dir, 'log'),
      '-w',
      '-o',
      `-p ${port} -c listen_addresses=127.0.0.1 -k ${dir} -c fsync=off`,
      'start',
    ]);
  const stop = () => pg('pg_ctl', ['-D', data, '-m', 'fast', '-w', 'stop']);

  afterAll(async () => {
    await t?.kill('SIGKILL');
    try {
      // A failed assertion during the freeze must not leave the cluster stopped.
      for (const pid of clusterPids()) process.kill(pid, 'SIGCONT');
    } catch {
      // not running
    }
    await receiver?.close();
    try {
      await stop();
    } catch {
      // already stopped
    }
    rmSync(dir, { recursive: true, force: true });
  });

  /** The cluster's processes (postmaster and its children), to freeze them with SIGSTOP. */
  function clusterPids(): number[] {
    const postmaster = Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
    const children = execFileSync('ps', ['-o', 'pid=', '--ppid', String(postmaster)])
      .toString()
      .split('\n')
      .map((line) => Number(line.trim()))
      .filter((pid) => pid > 0);
    return [postmaster, ...children];
  }

  it(
    'answers 503 with Retry-After within seconds when the server stops or stops answering, reports it on /ready, then delivers everything',
    { timeout: 240_000 },
    async () => {
      if (asRoot) chownSync(dir, runAs as number, runAs as number);
      await pg('initdb', ['-D', data, '-U', 'postgres', '-A', 'trust', '--no-sync']);
      port = await freePort();
      await start();
      const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
      receiver = await startReceiver();
      // The built server as a user runs it: a crash during the outage is an exit, not hidden.
      t = await startFerryProcess({
        dataDir: join(dir, 'ferry'),
        args: [
          '--database-url',
          url,
          '--secret-key',
          randomBytes(32).toString('base64'),
          '--lease',
          '2s',
          // 2 s rather than the default 5 s, so the freeze below can outlast it in 5 s, not 9.
          '--database-timeout',
          '2s',
        ],
      });
      const { baseUrl, token } = t.credentials;
      const api = (path: string, init: RequestInit) =>
        fetch(`${baseUrl}${path}`, { ...init, headers: { authorization: `Bearer ${token}` } });

      type Phase = 'before' | 'stopped' | 'frozen' | 'after';
      let phase: Phase = 'before';
      const acked = new Map<string, string>(); // message id → path
      const refused: { path: string; phase: Phase; status: number; ms: number; text: string }[] =
        [];
      const slowest: Record<Phase, number> = { before: 0, stopped: 0, frozen: 0, after: 0 };
      let stopped = false;
      let seq = 0;
      const publisher = async (): Promise<void> => {
        while (!stopped) {
          const path = `/m${seq++}`;
          const at = phase;
          const t0 = Date.now();
          const res = await api(`/v2/publish/${receiver?.url}${path}`, {
            method: 'POST',
            body: path,
            signal: AbortSignal.timeout(60_000),
          });
          const ms = Date.now() - t0;
          // Attributed to the worst phase the request saw.
          const seen = at === 'before' || at === 'after' ? phase : at;
          slowest[seen] = Math.max(slowest[seen], ms);
          const text = await res.text();
          if (res.status === 200) {
            acked.set((JSON.parse(text) as { messageId: string }).messageId, path);
          } else {
            refused.push({ path, phase: seen, status: res.status, ms, text });
            if (res.status === 503) expect(res.headers.get('retry-after'), text).toMatch(/^\d+$/);
          }
          await new Promise((r) => setTimeout(r, 20));
        }
      };
      const publishers = Array.from({ length: 4 }, publisher);
      const ackedSoon = async (more: number): Promise<void> => {
        const target = acked.size + more;
        const deadline = Date.now() + 60_000;
        while (acked.size < target && Date.now() < deadline) {
          await new Promise((r) => setTimeout(r, 100));
        }
        expect(acked.size).toBeGreaterThanOrEqual(target);
      };
      const ready = async () => {
        const res = await fetch(`${baseUrl}/ready`);
        return { status: res.status, body: await res.json() };
      };

      await receiver.waitFor(20, 30_000);
      // 1. The server shuts down (connections closed, then refused) for 3 s.
      phase = 'stopped';
      await stop();
      await new Promise((r) => setTimeout(r, 3_000));
      const readyStopped = await ready();
      await start();
      phase = 'after';
      await ackedSoon(20);

      // 2. The server stops answering without closing anything (a frozen host, a network
      // partition): connections stay open and queries wait. Longer than the 2 s deadline.
      const pids = clusterPids();
      phase = 'frozen';
      for (const pid of pids) process.kill(pid, 'SIGSTOP');
      await new Promise((r) => setTimeout(r, 5_000));
      const readyFrozen = await ready();
      for (const pid of pids) process.kill(pid, 'SIGCONT');
      phase = 'after';
      await ackedSoon(20);
      stopped = true;
      await Promise.all(publishers);

      // Every acknowledged message is delivered, without anyone restarting Ferry.
      const deliveredPaths = (): Set<string> =>
        new Set((receiver?.requests ?? []).map((r) => r.path.replace(/^.*(\/m\d+)$/, '$1')));
      const allDelivered = (): boolean => [...acked.values()].every((p) => deliveredPaths().has(p));
      const until = Date.now() + 60_000;
      while (!allDelivered() && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
      const readyAfter = await ready();

      const notStored = refused.filter((r) => r.text.includes('nothing was stored'));
      const unknown = refused.filter((r) => r.text.includes('may have been stored'));
      const count = (p: Phase): number => refused.filter((r) => r.phase === p).length;
      console.log(
        `db outage: ${acked.size} acknowledged; refused while stopped ${count('stopped')}, ` +
          `while frozen ${count('frozen')}, after ${count('after')} ` +
          `(${notStored.length} "nothing was stored", ${unknown.length} "may have been stored"); ` +
          `slowest answer: stopped ${slowest.stopped} ms, frozen ${slowest.frozen} ms, ` +
          `otherwise ${Math.max(slowest.before, slowest.after)} ms; ` +
          `delivered though refused: ${unknown.filter((r) => deliveredPaths().has(r.path)).length}`,
      );

      // Only 503s, each saying whether the publish may have been stored.
      for (const r of refused) {
        expect(r.status, r.text).toBe(503);
        expect(notStored.includes(r) || unknown.includes(r), r.text).toBe(true);
      }
      expect(count('stopped')).toBeGreaterThan(0);
      expect(count('frozen')).toBeGreaterThan(0);
      // Never a hang: the 2 s deadline (--database-timeout) plus the machine's delays.
      expect(slowest.stopped).toBeLessThan(5_000);
      expect(slowest.frozen).toBeLessThan(5_000);
      expect(readyStopped.status).toBe(503);
      expect(readyStopped.body).toMatchObject({ status: 'unavailable' });
      expect(readyFrozen.status).toBe(503);
      // Nothing acknowledged is lost; nothing answered "nothing was stored" is delivered.
      expect([...acked.values()].filter((p) => !deliveredPaths().has(p))).toEqual([]);
      expect(notStored.filter((r) => deliveredPaths().has(r.path))).toEqual([]);
      expect(readyAfter.status).toBe(200);
      expect(t.proc.exitCode).toBe(null);
    },
  );
});
