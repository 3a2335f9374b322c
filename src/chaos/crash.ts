/**
 * Crashes under load: publish at a steady rate to three destinations (fast, slow, failing) while
 * Ferry is SIGKILLed at random moments and restarted on the same data; then check, from what the
 * destinations recorded, that every acknowledged message was delivered, that every duplicate was
 * in flight at a kill, how long redelivery took after each kill, and that cron schedules fired
 * exactly once per minute across the kills.
 *
 * SQLite: one node, killed and restarted `rounds` times. PostgreSQL: two nodes on one schema,
 * either killed at random each round (the other keeps serving; the dead one's leases expire).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import {
  publish,
  paced,
  startChaosReceiver,
  startNode,
  tcpPortsOf,
  until,
  type Arrival,
  type ChaosReceiver,
  type FerryNode,
} from './harness.js';
import { chaosStorage } from './storage.js';
import { startChaosWorkflows, startFront, type WorkflowCheck } from './workflows.js';

/**
 * The nodes speak the QStash dialect (`Upstash-*` headers) so that the official workflow SDK can
 * run against them; the plain messages use the same headers.
 */
const PREFIX = 'Upstash';

export interface CrashOptions {
  storage: 'sqlite' | 'postgres';
  /** PostgreSQL server (storage `postgres`); a fresh schema is created and dropped. */
  databaseUrl?: string;
  rounds: number;
  /** Publishes per second offered. */
  rate: number;
  /** Time between kills, ms: uniform in [min, max]. */
  roundMs: [number, number];
  /** `--lease`, ms. */
  leaseMs: number;
  /** Cron schedules (`* * * * *`) running through the kills. */
  schedules: number;
  /** Workflow runs (`@upstash/workflow`, see workflows.ts) started per second during the kills. */
  workflows: number;
  /** Longest wait for the backlog after the last kill, ms. */
  drainTimeoutMs: number;
  log?: (line: string) => void;
}

export interface CrashReport {
  storage: string;
  rounds: number;
  kills: number;
  seconds: number;
  offeredRate: number;
  publishAttempts: number;
  /** Publishes answered 200: owed a delivery. */
  acknowledged: number;
  /** Publishes refused (connection refused or reset at a kill, or a 5xx): not owed. */
  refused: number;
  delivered: number;
  lost: number;
  lostIds: string[];
  /** Messages answered 2xx more than once by their destination. */
  duplicates: number;
  /** Duplicates whose first 2xx did not precede a kill (must be 0). */
  duplicatesNotInFlight: number;
  /** Arrivals (ms since the start: status) of a few duplicates that were not in flight. */
  examples: string[];
  /** Longest time from a kill to the next request of a message that was in flight at it, ms. */
  maxRedeliveryMs: number;
  redeliveryBoundMs: number;
  /** The same, from the moment the killed node answered again (SQLite: the restart). */
  maxRedeliveryAfterBackMs: number;
  /**
   * The slowest redelivery: its message, destination, and each arrival around the kill (ms
   * since the kill, status, the sender's port), to tell which node was late.
   */
  slowestRedelivery?: string;
  /**
   * The bound holds: SQLite redelivers when the node is back (from restart), PostgreSQL when the
   * lease expires (from the kill, as the other node takes over).
   */
  redeliveryWithinBound: boolean;
  /** The machine's 1-minute load average at the end (other work on the machine). */
  loadAverage: number;
  /** This (the load generator's) process's longest event-loop delay, ms: how late it timed things. */
  loopDelayMaxMs: number;
  /** Longest time from a kill until the node answered again (restart), ms. */
  maxRestartMs: number;
  schedules: { count: number; ticksExpected: number; fired: number[]; ok: boolean };
  /** Workflow runs started during the kills, and whether each completed with each step once. */
  workflows: WorkflowCheck & { triggerFailures: number; ok: boolean };
  statuses: Record<string, number>;
}

function successes(arrivals: Arrival[] | undefined): Arrival[] {
  return (arrivals ?? []).filter((a) => a.status >= 200 && a.status < 300);
}

export async function runCrash(o: CrashOptions): Promise<CrashReport> {
  const log = o.log ?? (() => undefined);
  const nodeCount = o.storage === 'postgres' ? 2 : 1;
  const dirs = Array.from({ length: nodeCount }, () => mkdtempSync(join(tmpdir(), 'ferry-chaos-')));
  const storage = chaosStorage(o.storage, o.databaseUrl);
  const args = [
    '--lease',
    `${Math.max(1, Math.round(o.leaseMs / 1000))}s`,
    '--header-prefix',
    PREFIX,
  ];
  args.push(...storage.args);
  const receivers: ChaosReceiver[] = await Promise.all(
    (['fast', 'slow', 'errors'] as const).map((b) =>
      startChaosReceiver(b, { prefix: PREFIX.toLowerCase() }),
    ),
  );
  const fast = receivers[0] as ChaosReceiver;
  const nodes: (FerryNode | undefined)[] = [];
  /** Kill sent, kill observed (the process exited), node answering again. */
  const kills: { at: number; exited: number; back: number; ports: Set<number> }[] = [];
  const restartMs: number[] = [];
  const acked = new Set<string>();
  const statuses: Record<string, number> = {};
  let stopped = false;
  let attempts = 0;
  const started = Date.now();
  /** This process's event-loop delay (ns): how late it may read an arrival or an exit. */
  const loopDelay = monitorEventLoopDelay({ resolution: 10 });
  loopDelay.enable();
  const front = await startFront(() =>
    nodes.filter((n): n is FerryNode => n !== undefined).map((n) => n.baseUrl),
  );
  let workflows: Awaited<ReturnType<typeof startChaosWorkflows>> | undefined;
  try {
    for (const dir of dirs) nodes.push(await startNode({ dataDir: dir, args }));
    const first = nodes[0] as FerryNode;
    const token = first.token;
    if (o.workflows > 0) {
      workflows = await startChaosWorkflows({
        front: front.url,
        token,
        currentSigningKey: first.currentSigningKey,
        nextSigningKey: first.nextSigningKey,
      });
    }

    const scheduleCreatedAt = Date.now();
    for (let i = 0; i < o.schedules; i++) {
      const res = await publishSchedule(
        (nodes[0] as FerryNode).baseUrl,
        token,
        `${fast.url}/s${i}`,
      );
      if (res !== 200 && res !== 201) throw new Error(`creating a schedule answered ${res}`);
    }

    const publishing = paced({
      rate: o.rate,
      concurrency: 64,
      stop: () => stopped,
      send: async (i) => {
        const live = nodes.filter((n): n is FerryNode => n !== undefined);
        const node = live[i % Math.max(1, live.length)];
        const dest = receivers[i % receivers.length] as ChaosReceiver;
        if (!node) {
          statuses['0'] = (statuses['0'] ?? 0) + 1;
          await new Promise((r) => setTimeout(r, 20));
          return;
        }
        attempts++;
        const res = await publish({
          baseUrl: node.baseUrl,
          token,
          destination: `${dest.url}/m${i}`,
          headers: { [`${PREFIX}-Retries`]: '20', [`${PREFIX}-Retry-Delay`]: '100' },
          body: `message ${i}`,
        });
        statuses[String(res.status)] = (statuses[String(res.status)] ?? 0) + 1;
        if (res.status === 200 && res.messageId) acked.add(res.messageId);
      },
    });

    const wf = workflows;
    const triggering = wf
      ? paced({
          rate: o.workflows,
          concurrency: 4,
          stop: () => stopped,
          send: (i) => wf.trigger(i),
        })
      : Promise.resolve(0);

    // A killed node restarts in the background; with two nodes the next kill takes a live one
    // (the other keeps serving meanwhile), with one node the next round waits for the restart.
    const restarts = new Map<number, Promise<void>>();
    const restart = (victim: number, kill: { at: number; exited: number; back: number }) =>
      startNode({ dataDir: dirs[victim] as string, args, timeoutMs: 120_000 }).then((node) => {
        nodes[victim] = node;
        kill.back = Date.now();
        restartMs.push(kill.back - kill.at);
        restarts.delete(victim);
      });
    // Surfaced by the Promise.all below; caught here so a background restart never goes unhandled.
    const settle = (p: Promise<void>): Promise<void> => {
      p.catch(() => undefined);
      return p;
    };
    for (let round = 0; round < o.rounds; round++) {
      const wait = o.roundMs[0] + Math.random() * (o.roundMs[1] - o.roundMs[0]);
      await new Promise((r) => setTimeout(r, wait));
      let live = nodes.flatMap((n, i) => (n ? [i] : []));
      if (live.length < 2 && restarts.size > 0 && nodeCount > 1) {
        await Promise.race(restarts.values()); // never kill the last live node of a cluster
        live = nodes.flatMap((n, i) => (n ? [i] : []));
      }
      const victim = live[Math.floor(Math.random() * live.length)] as number;
      const node = nodes[victim] as FerryNode;
      // The victim's sockets, read while it is stopped (it can open no other before the kill):
      // what it sent is told apart by port.
      const at = Date.now();
      node.proc.kill('SIGSTOP');
      const ports = node.proc.pid === undefined ? new Set<number>() : tcpPortsOf(node.proc.pid);
      const kill = { at, exited: 0, back: Number.POSITIVE_INFINITY, ports };
      nodes[victim] = undefined;
      node.proc.kill('SIGKILL');
      await node.exited;
      if (process.env.CHAOS_NODE_OUTPUT) log(node.output());
      kill.exited = Date.now();
      kills.push(kill);
      const restarted = settle(restart(victim, kill));
      restarts.set(victim, restarted);
      if (nodeCount === 1) await restarted;
      log(
        `  ${o.storage} round ${round + 1}/${o.rounds}: killed node ${victim + 1} after ${Math.round(wait)} ms; ` +
          `${acked.size} acknowledged so far`,
      );
    }
    await Promise.all(restarts.values());
    stopped = true;
    await Promise.all([publishing, triggering]);
    const publishEnd = Date.now();

    // Every acknowledged message delivered (a 2xx from its destination), or the deadline.
    const allDelivered = (): boolean =>
      [...acked].every((id) => receivers.some((r) => successes(r.byMessage.get(id)).length > 0));
    await until(allDelivered, o.drainTimeoutMs);
    const workflowCheck = wf
      ? await wf.check(o.drainTimeoutMs, kills)
      : {
          started: 0,
          completed: 0,
          notCompleted: [],
          stepsNotOnce: [],
          stepsRepeatedAtKill: 0,
          stepsRunAgain: 0,
        };

    // Schedules: one delivery per minute boundary since they were created. Wait past the tick
    // that is due now, then for its deliveries.
    const sinceBoundary = Date.now() % 60_000;
    if (o.schedules > 0 && sinceBoundary < 5_000) {
      await new Promise((r) => setTimeout(r, 5_000 - sinceBoundary));
    }
    const ticksExpected = Math.floor(Date.now() / 60_000) - Math.floor(scheduleCreatedAt / 60_000);
    const scheduleIds = () => [...fast.bySchedule.keys()];
    await until(
      () =>
        scheduleIds().length === (ticksExpected > 0 ? o.schedules : 0) &&
        [...fast.bySchedule.values()].every((ids) => ids.size >= ticksExpected),
      15_000,
    );
    const fired = scheduleIds().map((id) => fast.bySchedule.get(id)?.size ?? 0);
    while (fired.length < (ticksExpected > 0 ? o.schedules : 0)) fired.push(0);

    // Duplicates and redelivery, from the destinations' records.
    let duplicates = 0;
    let duplicatesNotInFlight = 0;
    const examples: string[] = [];
    let maxRedeliveryMs = 0;
    let maxRedeliveryAfterBackMs = 0;
    let slowestRedelivery: string | undefined;
    let delivered = 0;
    const lostIds: string[] = [];
    for (const r of receivers) {
      for (const [id, arrivals] of r.byMessage) {
        const ok = successes(arrivals);
        if (acked.has(id) && ok.length > 0) delivered++;
        if (ok.length > 1) {
          duplicates++;
          // Each repeat must follow a kill that came after the previous 2xx: that 2xx was sent
          // by the killed process before it was gone and the repeat came after the kill was
          // sent. Arrivals are timed by this process's event loop, which reads them late when it
          // is busy, so "sent before" is: read before the exit was seen, or (one node, SQLite)
          // before the node was back, as nothing else can deliver meanwhile, or (two nodes)
          // read from a socket of the killed process within a few seconds of its exit.
          const sentBefore = (a: Arrival, k: (typeof kills)[number]): boolean =>
            a.at <= k.exited ||
            (nodeCount === 1 ? a.at < k.back : k.ports.has(a.port) && a.at <= k.exited + 5_000);
          const explained = ok
            .slice(1)
            .every((repeat, i) =>
              kills.some((k) => sentBefore(ok[i] as Arrival, k) && repeat.at >= k.at),
            );
          if (!explained) {
            duplicatesNotInFlight++;
            if (examples.length < 5) {
              examples.push(
                `${r.behaviour} ${id}: ${arrivals.map((a) => `${a.at - started}:${a.status} from port ${a.port}`).join(', ')}`,
              );
            }
          }
        }
        for (const k of kills) {
          const before = arrivals.filter((a) => a.at <= k.exited).at(-1);
          const after = arrivals.find((a) => a.at > k.exited);
          if (!before || !after) continue;
          // In flight at the kill: not answered before it, or answered 2xx and yet repeated.
          const inFlight =
            before.answeredAt === undefined ||
            before.answeredAt > k.at ||
            (before.status >= 200 && before.status < 300);
          if (!inFlight) continue;
          if (after.at - k.at > maxRedeliveryMs) {
            maxRedeliveryMs = after.at - k.at;
            const show = (a: Arrival): string =>
              `${a.at - k.at}:${a.status} from port ${a.port}` +
              (a.answeredAt === undefined ? ' (no answer)' : ` answered ${a.answeredAt - k.at}`);
            slowestRedelivery =
              `${r.behaviour} ${id}, ms since the kill (exit seen ${k.exited - k.at}, back ` +
              `${k.back - k.at}, its ports ${[...k.ports].sort((x, y) => x - y).join(' ')}): ` +
              `before ${show(before)}; after ${show(after)}`;
          }
          maxRedeliveryAfterBackMs = Math.max(maxRedeliveryAfterBackMs, after.at - k.back);
        }
      }
    }
    for (const id of acked) {
      if (!receivers.some((r) => successes(r.byMessage.get(id)).length > 0)) lostIds.push(id);
    }
    const seconds = (publishEnd - started) / 1000;
    return {
      storage: o.storage,
      rounds: o.rounds,
      kills: kills.length,
      seconds,
      offeredRate: o.rate,
      publishAttempts: attempts,
      acknowledged: acked.size,
      refused: attempts - acked.size,
      delivered,
      lost: lostIds.length,
      lostIds: lostIds.slice(0, 10),
      duplicates,
      duplicatesNotInFlight,
      examples: [
        ...examples,
        `kills at ${kills.map((k) => `${k.at - started} (exit seen ${k.exited - started}; its ports ${[...k.ports].sort((x, y) => x - y).join(' ')})`).join(', ')}`,
      ],
      maxRedeliveryMs,
      maxRedeliveryAfterBackMs,
      ...(slowestRedelivery === undefined ? {} : { slowestRedelivery }),
      redeliveryWithinBound:
        (o.storage === 'sqlite' ? maxRedeliveryAfterBackMs : maxRedeliveryMs) <= o.leaseMs + 5_000,
      loadAverage: loadavg()[0] ?? 0,
      loopDelayMaxMs: loopDelay.max / 1e6,
      redeliveryBoundMs: o.leaseMs + 5_000,
      maxRestartMs: Math.max(0, ...restartMs),
      schedules: {
        count: o.schedules,
        ticksExpected,
        fired,
        ok: fired.every((n) => n === ticksExpected),
      },
      workflows: {
        ...workflowCheck,
        triggerFailures: wf?.triggerFailures ?? 0,
        ok: workflowCheck.notCompleted.length === 0 && workflowCheck.stepsNotOnce.length === 0,
      },
      statuses,
    };
  } finally {
    loopDelay.disable();
    stopped = true;
    for (const node of nodes) {
      if (!node) continue;
      if (process.env.CHAOS_NODE_OUTPUT) log(node.output());
      node.proc.kill('SIGTERM');
      await Promise.race([node.exited, new Promise((r) => setTimeout(r, 15_000))]);
      node.proc.kill('SIGKILL');
    }
    await Promise.all(receivers.map((r) => r.close()));
    await workflows?.close();
    await front.close();
    await storage.drop();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  }
}

async function publishSchedule(
  baseUrl: string,
  token: string,
  destination: string,
): Promise<number> {
  const res = await fetch(`${baseUrl}/v2/schedules/${destination}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, [`${PREFIX}-Cron`]: '* * * * *' },
  });
  await res.arrayBuffer();
  return res.status;
}

/** The report as lines of text. */
export function formatCrash(r: CrashReport): string[] {
  return [
    `crash (${r.storage}): ${r.kills} kills in ${r.seconds.toFixed(0)} s, offered ${r.offeredRate} publishes/s, ` +
      `achieved ${(r.publishAttempts / r.seconds).toFixed(0)}/s`,
    `  acknowledged ${r.acknowledged}, delivered ${r.delivered}, LOST ${r.lost}` +
      (r.lost > 0 ? ` (e.g. ${r.lostIds.join(', ')})` : ''),
    `  refused publishes ${r.refused} (statuses ${JSON.stringify(r.statuses)})`,
    `  duplicates ${r.duplicates}, of which not in flight at a kill: ${r.duplicatesNotInFlight}`,
    ...(r.duplicatesNotInFlight > 0 ? r.examples.map((e) => `    ${e}`) : []),
    `  longest kill → redelivery ${r.maxRedeliveryMs} ms, node back → redelivery ${r.maxRedeliveryAfterBackMs} ms ` +
      `(bound lease + 5 s = ${r.redeliveryBoundMs} ms); longest restart ${r.maxRestartMs} ms; load average ${r.loadAverage.toFixed(1)}, ` +
      `this process's longest event-loop delay ${r.loopDelayMaxMs.toFixed(0)} ms`,
    ...(r.slowestRedelivery === undefined ? [] : [`    slowest: ${r.slowestRedelivery}`]),
    `  schedules: ${r.schedules.count} × '* * * * *', ${r.schedules.ticksExpected} minute ticks expected, ` +
      `fired ${JSON.stringify(r.schedules.fired)} → ${r.schedules.ok ? 'none skipped, none doubled' : 'MISMATCH'}`,
    `  workflow runs: ${r.workflows.started} started (${r.workflows.triggerFailures} triggers failed at kills), ` +
      `${r.workflows.completed} completed with the right result, ` +
      `${r.workflows.stepsNotOnce.length} with a step missing or repeated without a kill; ` +
      `step results recorded again after a kill: ${r.workflows.stepsRepeatedAtKill}, ` +
      `step functions run again: ${r.workflows.stepsRunAgain}`,
    ...[...r.workflows.notCompleted, ...r.workflows.stepsNotOnce]
      .slice(0, 10)
      .map((e) => `    ${e}`),
  ];
}
