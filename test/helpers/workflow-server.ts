/**
 * A plain Node HTTP server on 127.0.0.1 that hosts workflow endpoints written with the official
 * `@upstash/workflow` `serve` (its handler takes a web `Request` and returns a `Response`).
 */
import { Client as QStashClient, Receiver } from '@upstash/qstash';
import { Client } from '@upstash/workflow';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll } from 'vitest';
import { ManualClock } from '../../src/core/clock.js';
import { startFerry, type TestFerry } from './ferry.js';

export type WebHandler = (request: Request) => Promise<Response>;

export interface WorkflowServer {
  url: string;
  /** Serves `handler` at `path` (`/wf/orders`). */
  route(path: string, handler: WebHandler): string;
  /** Requests seen, by path. */
  hits: Map<string, number>;
  close(): Promise<void>;
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

export async function startWorkflowServer(): Promise<WorkflowServer> {
  const routes = new Map<string, WebHandler>();
  const hits = new Map<string, number>();
  const server: Server = createServer((req, res) => {
    void (async () => {
      const path = (req.url ?? '/').split('?')[0] ?? '/';
      hits.set(path, (hits.get(path) ?? 0) + 1);
      const handler = routes.get(path);
      if (!handler) {
        res.writeHead(404).end();
        return;
      }
      const body = await readBody(req);
      const headers = new Headers();
      for (const [name, value] of Object.entries(req.headers)) {
        for (const v of [value ?? []].flat()) headers.append(name, v);
      }
      const method = req.method ?? 'GET';
      const response = await handler(
        new Request(`http://127.0.0.1${req.url ?? '/'}`, {
          method,
          headers,
          body: method === 'GET' || method === 'HEAD' ? undefined : body,
        }),
      );
      const out = Buffer.from(await response.arrayBuffer());
      res.writeHead(response.status, Object.fromEntries(response.headers.entries())).end(out);
    })().catch((error: unknown) => {
      res.writeHead(500).end(String(error));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    hits,
    route(path, handler) {
      routes.set(path, handler);
      return `${url}${path}`;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Runs the engine until nothing is due now; returns the deliveries made. */
export async function settle(
  engine: { runOnce(): Promise<number> },
  rounds = 100,
): Promise<number> {
  let total = 0;
  for (let round = 0; round < rounds; round++) {
    const n = await engine.runOnce();
    if (n === 0) return total;
    total += n;
  }
  throw new Error(`the workflow did not settle in ${rounds} rounds`);
}

/** The `serve` options of a workflow at `url` against a test Ferry: its client and signing keys. */
export function serveOptions(
  qstashClient: QStashClient,
  account: { currentSigningKey: string; nextSigningKey: string },
  url: string,
) {
  return {
    qstashClient,
    receiver: new Receiver({
      currentSigningKey: account.currentSigningKey,
      nextSigningKey: account.nextSigningKey,
    }),
    url,
    disableTelemetry: true,
  };
}

/** The official clients against a test Ferry: `qstash` for `serve`, `client` for runs. */
export function upstashClients(ferry: { url: string; token: string }) {
  return {
    qstash: new QStashClient({
      baseUrl: ferry.url,
      token: ferry.token,
      retry: false,
      enableTelemetry: false,
    }),
    client: new Client({ baseUrl: ferry.url, token: ferry.token, retry: false }),
  };
}

/** What `useUpstashWorkflows` starts for a describe block (set by its `beforeAll`). */
export interface UpstashWorkflows {
  t: TestFerry;
  clock: ManualClock;
  server: WorkflowServer;
  qstash: QStashClient;
  client: Client;
}

/**
 * Starts, before the describe block's tests, a Ferry in the `Upstash` dialect on `storage` with a
 * manual clock and no engine loop (tests deliver through `engine.runOnce()`), a workflow server
 * and the official clients; closes them after.
 */
export function useUpstashWorkflows(storage: 'sqlite' | 'postgres'): UpstashWorkflows {
  const setup = {} as UpstashWorkflows;
  beforeAll(async () => {
    setup.clock = new ManualClock(Date.now());
    setup.t = await startFerry({
      storage,
      clock: setup.clock,
      engine: false,
      args: ['--header-prefix', 'Upstash'],
    });
    setup.server = await startWorkflowServer();
    Object.assign(setup, upstashClients(setup.t));
  });
  afterAll(async () => {
    await setup.t.close();
    await setup.server.close();
  });
  return setup;
}
