/**
 * Workflow runs across kills (the crash case): a workflow of {@link STEPS} `context.run` steps
 * written with the official `@upstash/workflow` SDK, served on a node:http server in this
 * process, whose SDK client reaches Ferry through a front (a small proxy to whichever node is
 * alive, as a load balancer would be). Runs are triggered during the kills; afterwards each
 * started run must have completed (Ferry says `RUN_SUCCESS`, the function returned) with the
 * right result (each step's result used once), each step's result in the run's history, and a
 * step result recorded twice only when the step's delivery was in flight at a kill (its first
 * result recorded before the node was gone, or up to RESULT_AFTER_KILL_MS after).
 *
 * Why twice at all: a step's delivery that was in flight at a kill is delivered again (at least
 * once); the SDK runs the step again and publishes its result again, so the history holds it
 * twice, as it would on QStash. The SDK keeps the first of a step id and ignores the repeat
 * ("has run twice during workflow execution"), so the run's result is unaffected.
 *
 * The SDK is a development dependency, so it is loaded only when this case runs.
 */
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import { loadAgent, until } from './harness.js';

/**
 * How long after a kill the first result of a step that was in flight there may be recorded and
 * still count as explained by it. The killed node's delivery is cut, but the SDK's handler runs
 * on and publishes the step's result through the front to a live node, after the kill (seen
 * under load: a result recorded after the node had exited, its repeat after the lease expired).
 */
const RESULT_AFTER_KILL_MS = 3_000;

const STEPS = 4;

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** A server of this case: its URL and how to stop it. */
interface Closable {
  url: string;
  close(): Promise<void>;
}

function listen(server: ReturnType<typeof createServer>): Promise<string> {
  server.keepAliveTimeout = 60_000;
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`),
    ),
  );
}

function closer(server: ReturnType<typeof createServer>): () => Promise<void> {
  return () => {
    server.closeAllConnections();
    return new Promise((resolve) => server.close(() => resolve()));
  };
}

/**
 * A front for the nodes: forwards each request to a live node (round robin over `live()`), and
 * answers 503 when none is alive or the node's connection fails (a node killed meanwhile).
 */
export async function startFront(live: () => string[]): Promise<Closable> {
  let turn = 0;
  const server = createServer((req, res) => {
    void (async () => {
      const body = await readBody(req);
      const nodes = live();
      const base = nodes[turn++ % Math.max(1, nodes.length)];
      if (!base) {
        res.writeHead(503).end('no live node');
        return;
      }
      const headers = { ...req.headers };
      delete headers.host;
      delete headers.connection;
      const method = req.method ?? 'GET';
      const answer = await request(`${base}${req.url ?? '/'}`, {
        method,
        headers,
        body: method === 'GET' || method === 'HEAD' ? undefined : body,
        dispatcher: loadAgent,
        headersTimeout: 30_000,
        bodyTimeout: 30_000,
      });
      const out = Buffer.from(await answer.body.arrayBuffer());
      const outHeaders: Record<string, string | string[]> = {};
      for (const [name, value] of Object.entries(answer.headers)) {
        if (value !== undefined && name !== 'connection' && name !== 'transfer-encoding') {
          outHeaders[name] = value;
        }
      }
      res.writeHead(answer.statusCode, outHeaders).end(out);
    })().catch(() => {
      if (!res.headersSent) res.writeHead(503).end('node unreachable');
      else res.destroy();
    });
  });
  const url = await listen(server);
  return { url, close: closer(server) };
}

export interface ChaosWorkflows {
  /** Runs triggered and acknowledged (200), by run id. */
  started: Set<string>;
  /** Trigger attempts that failed (a node down, or its answer lost at a kill). */
  triggerFailures: number;
  /** Triggers run `i` (run id `wfr_chaos_<i>`) through the front; never throws. */
  trigger(i: number): Promise<void>;
  /** Waits (at most `timeoutMs`) for every started run to finish, then checks Ferry's history. */
  check(timeoutMs: number, kills: KillTimes[]): Promise<WorkflowCheck>;
  close(): Promise<void>;
}

export interface WorkflowCheck {
  started: number;
  /** Runs whose function returned and whose state in Ferry is RUN_SUCCESS with the right result. */
  completed: number;
  notCompleted: string[];
  /** Runs whose history misses a step, or repeats one that no kill explains (must be none). */
  stepsNotOnce: string[];
  /** Step results recorded twice, the first before a kill and the repeat after it. */
  stepsRepeatedAtKill: number;
  /** Step functions run more than once (at least once: a step in flight at a kill runs again). */
  stepsRunAgain: number;
}

/** A kill of the crash case: when the signal was sent and when the process was seen gone. */
export interface KillTimes {
  at: number;
  exited: number;
}

/** Serves the chaos workflow and triggers runs through `front`. */
export async function startChaosWorkflows(o: {
  front: string;
  token: string;
  currentSigningKey: string;
  nextSigningKey: string;
}): Promise<ChaosWorkflows> {
  const { serve, Client: WorkflowClient } = await import('@upstash/workflow');
  const { Client, Receiver } = await import('@upstash/qstash');
  /** Runs whose function returned (after its last step). */
  const finished = new Set<string>();
  /** Executions of each step function, by `runId/step`. */
  const executions = new Map<string, number>();
  const served: { handler?: (request: Request) => Promise<Response> } = {};
  const server = createServer((req, res) => {
    void (async () => {
      const body = await readBody(req);
      const headers = new Headers();
      for (const [name, value] of Object.entries(req.headers)) {
        for (const v of [value ?? []].flat()) headers.append(name, v);
      }
      if (!served.handler) throw new Error('the workflow is not served yet');
      const response = await served.handler(
        new Request(workflowUrl, { method: req.method ?? 'POST', headers, body }),
      );
      res.writeHead(response.status).end(Buffer.from(await response.arrayBuffer()));
    })().catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(500).end(String(error));
    });
  });
  const workflowUrl = `${await listen(server)}/workflow`;
  const qstashClient = new Client({
    baseUrl: o.front,
    token: o.token,
    retry: false,
    enableTelemetry: false,
  });
  served.handler = serve(
    async (context) => {
      let sum = 0;
      for (let i = 0; i < STEPS; i++) {
        sum += await context.run(`step-${i}`, () => {
          const key = `${context.workflowRunId}/${i}`;
          executions.set(key, (executions.get(key) ?? 0) + 1);
          return i;
        });
      }
      finished.add(context.workflowRunId);
      return sum;
    },
    {
      qstashClient,
      receiver: new Receiver({
        currentSigningKey: o.currentSigningKey,
        nextSigningKey: o.nextSigningKey,
      }),
      url: workflowUrl,
      disableTelemetry: true,
    },
  ).handler;
  const client = new WorkflowClient({ baseUrl: o.front, token: o.token, retry: false });
  const started = new Set<string>();
  let triggerFailures = 0;

  /** A run's state, its result, and when each step's result was recorded (once or more). */
  const history = async (
    runId: string,
  ): Promise<{ state?: string; response?: string; steps: number[][] }> => {
    const { runs } = await client.logs({ filter: { workflowRunId: runId } });
    const run = runs[0];
    const steps = Array.from({ length: STEPS }, (): number[] => []);
    for (const group of run?.steps ?? []) {
      if (group.type === 'next') continue;
      for (const step of group.steps) {
        const i = Number(/^step-(\d+)$/.exec(step.stepName)?.[1]);
        if (step.stepType === 'Run' && i < STEPS) steps[i]?.push(step.createdAt);
      }
    }
    return { state: run?.workflowState, response: run?.workflowRunResponse, steps };
  };

  return {
    started,
    get triggerFailures() {
      return triggerFailures;
    },
    async trigger(i) {
      try {
        // The SDK prefixes the id: the run is `wfr_chaos_<i>`.
        const run = await client.trigger({
          url: workflowUrl,
          workflowRunId: `chaos_${i}`,
          retries: 20,
          retryDelay: '200',
        });
        started.add(run.workflowRunId);
      } catch {
        triggerFailures++;
      }
    },
    async check(timeoutMs, kills) {
      await until(() => [...started].every((id) => finished.has(id)), timeoutMs);
      const notCompleted: string[] = [];
      const stepsNotOnce: string[] = [];
      let stepsRepeatedAtKill = 0;
      const result = String((STEPS * (STEPS - 1)) / 2); // the sum of the steps' results
      for (const id of started) {
        let h = await history(id);
        // The SDK ends a run (a request to Ferry) after its function returned: wait for it.
        const deadline = Date.now() + 30_000;
        while (finished.has(id) && h.state === 'RUN_STARTED' && Date.now() < deadline) {
          await new Promise((r) => setTimeout(r, 200));
          h = await history(id);
        }
        if (!finished.has(id) || h.state !== 'RUN_SUCCESS' || h.response !== result) {
          notCompleted.push(`${id} (${h.state ?? 'unknown'}, result ${h.response})`);
        }
        for (const times of h.steps) {
          const explained = times
            .slice(1)
            .every((repeat, i) =>
              kills.some(
                (k) => (times[i] as number) <= k.exited + RESULT_AFTER_KILL_MS && repeat >= k.at,
              ),
            );
          if (times.length === 0 || !explained) {
            // With the times relative to the last kill before the first result, to tell why.
            const kill = kills.filter((k) => k.at <= (times[0] ?? 0)).at(-1);
            const rel = kill ? times.map((at) => at - kill.at) : times;
            const where = kill ? ` ms after a kill (exited +${kill.exited - kill.at} ms)` : '';
            stepsNotOnce.push(
              `${id} ${JSON.stringify(h.steps.map((t) => t.length))}: recorded at ${rel.join(', ')}${where}`,
            );
            break;
          }
          stepsRepeatedAtKill += times.length - 1;
        }
      }
      return {
        started: started.size,
        completed: started.size - notCompleted.length,
        notCompleted,
        stepsNotOnce,
        stepsRepeatedAtKill,
        stepsRunAgain: [...executions.values()].filter((n) => n > 1).length,
      };
    },
    close: closer(server),
  };
}
