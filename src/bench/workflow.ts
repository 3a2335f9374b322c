/**
 * The workflow case of `npm run bench`: a 5-step workflow written with the official
 * `@upstash/workflow` SDK (`serve` on a plain node:http server in the benchmark process) against
 * Ferry in `--header-prefix Upstash` mode. The SDK is a development dependency, so it is loaded
 * only when this case runs.
 */
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface WorkflowEndpoint {
  url: string;
  /** Resolves when `n` runs have finished their last step (counted from the start). */
  finished(n: number): Promise<void>;
  /** Per finished run: ms from its trigger (written into its payload) to its last step. */
  durations: number[];
  /**
   * Resolves when no request is being served: the SDK completes a run (a request to Ferry) after
   * its last step has run, so stopping Ferry before would fail that request.
   */
  idle(): Promise<void>;
  close(): Promise<void>;
}

const STEPS = 5;

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** Serves a workflow of {@link STEPS} `context.run` steps that records when each run finishes. */
export async function startWorkflowEndpoint(ferry: {
  baseUrl: string;
  token: string;
  currentSigningKey: string;
  nextSigningKey: string;
}): Promise<WorkflowEndpoint> {
  const { serve } = await import('@upstash/workflow');
  const { Client, Receiver } = await import('@upstash/qstash');
  const durations: number[] = [];
  const waiters: { n: number; resolve: () => void }[] = [];
  const served: { handler?: (request: Request) => Promise<Response> } = {};
  let serving = 0;
  let idleWaiters: (() => void)[] = [];
  const server = createServer((req, res) => {
    serving++;
    res.on('close', () => {
      if (--serving > 0) return;
      for (const resolve of idleWaiters) resolve();
      idleWaiters = [];
    });
    void (async () => {
      const body = await readBody(req);
      const headers = new Headers();
      for (const [name, value] of Object.entries(req.headers)) {
        for (const v of [value ?? []].flat()) headers.append(name, v);
      }
      const method = req.method ?? 'POST';
      if (!served.handler) throw new Error('the workflow is not served yet');
      const response = await served.handler(
        new Request(url, {
          method,
          headers,
          body: method === 'GET' || method === 'HEAD' ? undefined : body,
        }),
      );
      res.writeHead(response.status).end(Buffer.from(await response.arrayBuffer()));
    })().catch((error: unknown) => res.writeHead(500).end(String(error)));
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/workflow`;
  served.handler = serve<{ startedAt: number }>(
    async (context) => {
      let sum = 0;
      for (let i = 0; i < STEPS; i++) sum += await context.run(`step-${i}`, () => i);
      // Runs once, in the invocation that finds every step done (before it completes the run).
      durations.push(Date.now() - context.requestPayload.startedAt);
      for (const w of waiters.filter((w) => durations.length >= w.n)) w.resolve();
      return sum;
    },
    {
      qstashClient: new Client({
        baseUrl: ferry.baseUrl,
        token: ferry.token,
        retry: false,
        enableTelemetry: false,
      }),
      receiver: new Receiver({
        currentSigningKey: ferry.currentSigningKey,
        nextSigningKey: ferry.nextSigningKey,
      }),
      url,
      disableTelemetry: true,
    },
  ).handler;
  return {
    url,
    durations,
    finished(n) {
      if (durations.length >= n) return Promise.resolve();
      return new Promise((resolve) => waiters.push({ n, resolve }));
    },
    idle() {
      if (serving === 0) return Promise.resolve();
      return new Promise((resolve) => idleWaiters.push(resolve));
    },
    close() {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

/** Starts `n` runs with the official workflow `Client.trigger`, `concurrency` at a time. */
export async function triggerRuns(
  ferry: { baseUrl: string; token: string },
  url: string,
  n: number,
  concurrency: number,
): Promise<void> {
  const { Client } = await import('@upstash/workflow');
  const client = new Client({ baseUrl: ferry.baseUrl, token: ferry.token, retry: false });
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < n) {
      next++;
      await client.trigger({ url, body: { startedAt: Date.now() } });
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}

export const WORKFLOW_STEPS = STEPS;
