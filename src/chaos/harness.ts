/**
 * Pieces shared by the chaos cases (`npm run chaos`, `test/chaos.test.ts`): the built `ferry
 * start` as a child process that can be SIGKILLed and restarted on the same data, receivers on
 * 127.0.0.1 that record every request and answer fast, slowly or with errors, and a paced
 * publisher. Nothing here mocks Ferry: the processes, sockets and databases are real.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Agent, request } from 'undici';

/** The built CLI (`dist/cli/main.js`), also when this file runs from `src/` under vitest. */
export const MAIN = new URL('../cli/main.js', import.meta.url).pathname.replace(
  /\/src\/cli\/main\.js$/,
  '/dist/cli/main.js',
);

export interface FerryNode {
  proc: ChildProcess;
  baseUrl: string;
  token: string;
  /** The account's signing keys (what a workflow endpoint verifies deliveries with). */
  currentSigningKey: string;
  nextSigningKey: string;
  output(): string;
  exited: Promise<number | null>;
}

/** Starts `ferry start` on `dataDir` and waits for its banner (at most `timeoutMs`). */
export async function startNode(p: {
  dataDir: string;
  args?: string[];
  env?: Record<string, string>;
  timeoutMs?: number;
}): Promise<FerryNode> {
  const proc = spawn(
    process.execPath,
    [
      MAIN,
      'start',
      '--port',
      '0',
      '--data-dir',
      p.dataDir,
      '--log-level',
      'error',
      ...(p.args ?? []),
    ],
    { env: { ...process.env, ...p.env }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  const append = (d: Buffer): void => {
    out += d.toString();
    if (out.length > 200_000) out = out.slice(-100_000);
  };
  proc.stdout?.on('data', append);
  proc.stderr?.on('data', append);
  const exited = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new Error(`ferry did not start in ${p.timeoutMs ?? 30_000} ms:\n${out}`));
    }, p.timeoutMs ?? 30_000);
    const onData = (): void => {
      if (out.includes('Ferry is running at')) {
        clearTimeout(timer);
        resolve();
      }
    };
    proc.stdout?.on('data', onData);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`ferry exited with ${code} before starting:\n${out}`));
    });
  });
  const credentials = JSON.parse(readFileSync(join(p.dataDir, 'credentials.json'), 'utf8')) as {
    baseUrl: string;
    token: string;
    currentSigningKey: string;
    nextSigningKey: string;
  };
  return {
    proc,
    baseUrl: /Ferry is running at (http:\/\/\S+)/.exec(out)?.[1] ?? credentials.baseUrl,
    token: credentials.token,
    currentSigningKey: credentials.currentSigningKey,
    nextSigningKey: credentials.nextSigningKey,
    output: () => out,
    exited,
  };
}

export interface Arrival {
  at: number;
  /** The sender's TCP port: which process sent it (see `tcpPortsOf`). */
  port: number;
  /** When the answer was written, or undefined when the connection closed first. */
  answeredAt?: number;
  status: number;
}

export type Behaviour = 'fast' | 'slow' | 'errors' | 'hang';

export interface ChaosReceiver {
  url: string;
  behaviour: Behaviour;
  /** Requests by message id, in arrival order. */
  byMessage: Map<string, Arrival[]>;
  requests: number;
  /** Message ids seen (every behaviour; the only record with `light`). */
  seen: Set<string>;
  /** Message ids delivered for each schedule (`<P>-Schedule-Id`). */
  bySchedule: Map<string, Set<string>>;
  /** Called on every request (after recording it). */
  onRequest?: (messageId: string, at: number) => void;
  close(): Promise<void>;
}

/**
 * A destination: `fast` answers 200 at once; `slow` after 50-400 ms; `errors` answers 500 to
 * about a third of first attempts and 503 to some retries, 200 otherwise; `hang` never answers.
 */
export async function startChaosReceiver(
  behaviour: Behaviour,
  options: { prefix?: string; light?: boolean } = {},
): Promise<ChaosReceiver> {
  const prefix = options.prefix ?? 'svc';
  const idHeader = `${prefix}-message-id`;
  const retriedHeader = `${prefix}-retried`;
  const r: ChaosReceiver = {
    url: '',
    behaviour,
    byMessage: new Map(),
    seen: new Set(),
    bySchedule: new Map(),
    requests: 0,
    close: () => Promise.resolve(),
  };
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const id = String(req.headers[idHeader] ?? req.url);
      const retried = Number(req.headers[retriedHeader] ?? 0);
      const arrival: Arrival = { at: Date.now(), port: req.socket.remotePort ?? 0, status: 0 };
      r.seen.add(id);
      const list = r.byMessage.get(id);
      if (list) list.push(arrival);
      else if (!options.light) r.byMessage.set(id, [arrival]);
      r.requests++;
      const scheduleId = req.headers[`${prefix}-schedule-id`];
      if (typeof scheduleId === 'string') {
        const ids = r.bySchedule.get(scheduleId) ?? new Set<string>();
        r.bySchedule.set(scheduleId, ids.add(id));
      }
      r.onRequest?.(id, arrival.at);
      if (behaviour === 'hang') return;
      let status = 200;
      if (behaviour === 'errors') {
        const roll = Math.random();
        if (retried === 0 && roll < 0.33) status = 500;
        else if (retried > 0 && roll < 0.1) status = 503;
      }
      const answer = (): void => {
        if (res.destroyed) return;
        res.statusCode = status;
        res.end('ok', () => {
          arrival.status = status;
          arrival.answeredAt = Date.now();
        });
      };
      if (behaviour === 'slow') setTimeout(answer, 50 + Math.random() * 350);
      else answer();
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  r.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  r.close = () => {
    server.closeAllConnections();
    return new Promise((resolve) => server.close(() => resolve()));
  };
  return r;
}

/**
 * The local TCP ports of process `pid`'s sockets (Linux: its `/proc/<pid>/fd` socket inodes
 * looked up in `/proc/net/tcp{,6}`); empty where /proc cannot be read. A request that a
 * receiver read from one of these ports was sent by that process, whenever this process got
 * round to reading it.
 */
export function tcpPortsOf(pid: number): Set<number> {
  const ports = new Set<number>();
  try {
    const inodes = new Set<string>();
    for (const fd of readdirSync(`/proc/${pid}/fd`)) {
      try {
        const match = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
        if (match?.[1]) inodes.add(match[1]);
      } catch {
        // closed meanwhile
      }
    }
    for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
      for (const line of readFileSync(table, 'utf8').split('\n').slice(1)) {
        const fields = line.trim().split(/\s+/);
        const port = fields[1]?.split(':')[1];
        if (port && inodes.has(fields[9] ?? '')) ports.add(parseInt(port, 16));
      }
    }
  } catch {
    // not Linux, or the process is gone
  }
  return ports;
}

/** A keep-alive HTTP client for the load generator (undici, many connections per origin). */
export const loadAgent = new Agent({ connections: 256, keepAliveTimeout: 30_000, pipelining: 1 });

export interface PublishResult {
  status: number;
  messageId?: string;
  latencyMs: number;
  retryAfter?: string;
}

/** One publish; a connection error (a killed node) is status 0. */
export async function publish(p: {
  baseUrl: string;
  token: string;
  destination: string;
  headers?: Record<string, string>;
  body?: string;
  timeoutMs?: number;
}): Promise<PublishResult> {
  const started = performance.now();
  try {
    const res = await request(`${p.baseUrl}/v2/publish/${p.destination}`, {
      method: 'POST',
      dispatcher: loadAgent,
      headers: { authorization: `Bearer ${p.token}`, ...p.headers },
      body: p.body ?? 'chaos',
      headersTimeout: p.timeoutMs ?? 30_000,
      bodyTimeout: p.timeoutMs ?? 30_000,
    });
    const text = await res.body.text();
    const latencyMs = performance.now() - started;
    const retryAfter = res.headers['retry-after'];
    if (res.statusCode === 200 || res.statusCode === 201) {
      const json = JSON.parse(text) as { messageId?: string };
      return { status: res.statusCode, messageId: json.messageId, latencyMs };
    }
    return {
      status: res.statusCode,
      latencyMs,
      retryAfter: typeof retryAfter === 'string' ? retryAfter : undefined,
    };
  } catch {
    return { status: 0, latencyMs: performance.now() - started };
  }
}

/**
 * Calls `send(i)` about `rate` times a second from `concurrency` loops until `stop()` returns
 * true. A slow server slows the loops down (a loop waits for its answer), so the achieved rate
 * is what the server took.
 */
export async function paced(p: {
  rate: number;
  concurrency: number;
  stop: () => boolean;
  send: (i: number) => Promise<void>;
}): Promise<number> {
  let next = 0;
  const started = performance.now();
  const loop = async (): Promise<void> => {
    while (!p.stop()) {
      const i = next++;
      const due = started + (i * 1000) / p.rate;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      if (p.stop()) break;
      await p.send(i);
    }
  };
  await Promise.all(Array.from({ length: p.concurrency }, loop));
  return next;
}

/** Resolves when `check()` is true (polled every 50 ms); false after `timeoutMs`. */
export async function until(check: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 50));
  }
  return true;
}

/** The `q` quantile (0..1) of `values` (nearest rank), or NaN when empty. */
export function quantile(values: number[], q: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? NaN;
}
