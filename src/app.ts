/**
 * The composition root: builds storage, the account directory, the publisher, the delivery
 * engine, the scheduler, the pruner and the HTTP API from a `Config`, and starts/stops them in order. Only this
 * file (through `openDriver`) picks a concrete storage driver.
 */
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import {
  buildManagementServer,
  buildOpsServer,
  buildServer,
  type OpsOptions,
} from './api/server.js';
import { PublishAdmission } from './api/admission.js';
import type { MgmtContext } from './api/mgmt/index.js';
import type { Config } from './cli/config.js';
import { makeDataDir } from './cli/data-dir.js';
import { loadSecretKey } from './cli/secret-key.js';
import { systemClock, type Clock } from './core/clock.js';
import { SecretBox } from './core/secret-box.js';
import { silentLogger, type Logger } from './core/logger.js';
import { AccountDirectory } from './engine/accounts.js';
import { createHttpDispatcher, type Dispatcher } from './engine/dispatcher.js';
import { DueSignal } from './engine/due-signal.js';
import { watchDueTimes } from './engine/due-watch.js';
import { Engine } from './engine/engine.js';
import { createWorkerDispatcher } from './engine/worker-dispatcher.js';
import { Publisher } from './engine/publisher.js';
import { Pruner } from './maintenance/pruner.js';
import { UsageMeter } from './maintenance/usage-meter.js';
import { Scheduler } from './scheduler/scheduler.js';
import { timeCommits } from './metrics/commit-timing.js';
import { PrometheusMetrics } from './metrics/prometheus.js';
import { registerStorageGauges } from './metrics/storage-gauges.js';
import type { UsageRecorder } from './core/management.js';
import type { Driver } from './storage/driver.js';
import { openPostgresDriver } from './storage/postgres/postgres-driver.js';
import { openSqliteDriver } from './storage/sqlite/sqlite-driver.js';

export interface FerryOptions {
  config: Config;
  clock?: Clock;
  logger: Logger;
  /** A driver to use instead of the one the config names (tests). */
  driver?: Driver;
  dispatcher?: Dispatcher;
  /**
   * Opens a few database connections before serving (`Driver.openConnections`), so that the first
   * burst of requests does not wait for each to connect. `ferry start` sets it; tests and embedded
   * uses, which start many instances on one server, leave it off.
   */
  openConnections?: boolean;
}

export interface Ferry {
  readonly config: Config;
  readonly driver: Driver;
  readonly accounts: AccountDirectory;
  /** Seals and opens stored credentials under the secret key (`--secret-key`, or secret.key). */
  readonly secrets: SecretBox;
  readonly publisher: Publisher;
  readonly engine: Engine;
  readonly scheduler: Scheduler;
  readonly pruner: Pruner;
  readonly server: FastifyInstance;
  /** Counts usage in memory and flushes it (`runOnce()` in tests). */
  readonly meter: UsageMeter;
  /** The management API's own server with `--mgmt-port`; else it is served by `server`. */
  readonly mgmtServer: FastifyInstance | undefined;
  /** The API's base URL once `start()` has listened (`http://host:port`). */
  url: string;
  /** The management API's URL once `start()` has listened (`url` unless `--mgmt-port`). */
  mgmtUrl: string;
  /** Serves `/metrics`, `/ready` and `/health` with `--metrics-port`; else `server` serves them. */
  readonly opsServer: FastifyInstance | undefined;
  /** The URL serving `/metrics` once `start()` has listened (`url` unless `--metrics-port`). */
  metricsUrl: string;
  /** The Prometheus registry behind `/metrics`. */
  readonly metrics: PrometheusMetrics;
  /** Listens and starts the services this node's roles name. */
  start(): Promise<void>;
  /** Graceful stop: no new requests or claims, in-flight work finishes or is released, storage closed. Idempotent. */
  stop(): Promise<void>;
}

/** `logger` hears of SQLite checkpoints that fail (the WAL then grows until one succeeds). */
export function openDriver(config: Config, logger: Logger = silentLogger): Driver {
  makeDataDir(config.dataDir);
  if (config.databaseUrl) {
    return openPostgresDriver({
      url: config.databaseUrl,
      schema: config.databaseSchema,
      timeoutMs: config.databaseTimeoutMs,
    });
  }
  return openSqliteDriver({
    path: join(config.dataDir, 'ferry.db'),
    synchronous: config.sqliteSynchronous,
    maxSizeBytes: config.sqliteMaxSize,
    onCheckpoint: (event) => {
      if (event.type === 'failed') {
        logger.warn({ mode: event.mode, error: event.error }, 'SQLite WAL checkpoint failed');
      }
    },
  });
}

/** The `iss` claim: `Upstash` in Upstash mode (the official Receiver checks it), else `Ferry`. */
export const issuerFor = (prefix: string): string =>
  prefix.toLowerCase() === 'upstash' ? 'Upstash' : 'Ferry';

export async function createFerry(options: FerryOptions): Promise<Ferry> {
  const { config, logger } = options;
  const clock = options.clock ?? systemClock;
  // Before storage opens: a missing or malformed key stops the start with a ConfigError.
  makeDataDir(config.dataDir);
  const secrets = new SecretBox(loadSecretKey(config));
  const driver = options.driver ?? openDriver(config, logger);
  await driver.migrate();
  // Only a head start: a connection that fails to open now is opened later, as it would have been.
  if (options.openConnections) await driver.openConnections?.().catch(() => undefined);
  const metrics = new PrometheusMetrics({ accountLabel: config.metricsAccountLabel });
  // An own property of the driver's executor, so the due-time watch below wraps the timed one.
  timeCommits(driver.executor, metrics);
  // Every write that makes a message due reports its time once committed (engine/due-watch.ts):
  // this node's engine claims then, other nodes hear of it through NOTIFY.
  const dueSignal = new DueSignal({
    clock,
    logger,
    local: (dueAt) => engine.wakeAt(dueAt),
    notify: (dueAt) => driver.notifyWake(dueAt),
    localHasRoom: () => engine.hasRoom(),
  });
  const executor = watchDueTimes(driver.executor, dueSignal.report);
  registerStorageGauges({ executor, clock, logger, registry: metrics.registry });
  // Several nodes may share a PostgreSQL database: authenticate against the stored row every
  // time, so a token reset or deletion on any node is refused by every node's next request.
  const accounts = new AccountDirectory(
    executor,
    config.plans,
    clock,
    1_000,
    driver.name === 'postgres' ? 0 : 1_000,
  );
  const meter = new UsageMeter({ executor, clock, logger, intervalMs: config.meteringFlushMs });
  // Workflow messages are published from many places (the API, outcomes, resumes, notifies),
  // each of which meters them: their metering is their count. So are runs started (a trigger, a
  // resume or restart, an invoke), completed and cancelled; runs that fail are not metered, and
  // the outcome writer counts them.
  const runEvents = {
    workflow_run: 'started',
    workflow_delivered: 'succeeded',
    workflow_canceled: 'canceled',
  } as const;
  const usage: UsageRecorder = {
    add(subjectId, metric, value, at) {
      meter.add(subjectId, metric, value, at);
      if (metric === 'workflow_message') metrics.published('workflow', subjectId, value);
      else if (metric in runEvents) {
        metrics.workflowRuns(runEvents[metric as keyof typeof runEvents], value);
      }
    },
  };
  const dispatcher =
    options.dispatcher ??
    (config.deliveryThread ? createWorkerDispatcher : createHttpDispatcher)({
      refusePrivate: config.production,
    });
  const engine = new Engine({
    executor,
    clock,
    dispatcher,
    accounts,
    logger,
    prefix: config.headerPrefix,
    issuer: issuerFor(config.headerPrefix),
    concurrency: config.concurrency,
    originConcurrency: config.originConcurrency,
    originStallMs: config.originStallMs,
    originFailureRate: config.originFailureRate,
    workflowInlineHistoryBytes: config.workflowInlineHistoryBytes,
    leaseMs: config.leaseMs,
    usage,
    metrics,
    oneStatementOutcomes: driver.name === 'postgres',
  });
  /** Something is due now (the due-time watch reports the writes; kept for explicit wakes). */
  const wake = (): void => dueSignal.report(0);
  const publisher = new Publisher({
    executor,
    clock,
    logger,
    usage,
    metrics,
    // On PostgreSQL a keyed publish batch holds its gates' row locks through its commit, so
    // concurrent keyed batches would queue on each other: one at a time, they batch instead.
    // SQLite has one writer and overlaps commits with fsyncs (see group-commit.ts).
    gatedMaxInFlight: driver.name === 'postgres' ? 1 : undefined,
    schedule: (now) => engine.publishSchedule(now),
    oneStatement: driver.name === 'postgres',
    // On PostgreSQL the publish statement keeps a lease only within max_global_parallelism,
    // counted across nodes under the claim's lock (migration 014).
    handOff: engine,
    maxInFlightByPlan: accounts.limitByPlan('max_global_parallelism'),
  });
  const scheduler = new Scheduler({
    executor,
    clock,
    accounts,
    logger,
    prefix: config.headerPrefix,
    onFired: wake,
    usage,
    metrics,
  });
  const pruner = new Pruner({ executor, clock, logger, eventRetentionMs: config.eventRetentionMs });
  const backupTo = driver.backup?.bind(driver);
  const management: MgmtContext = {
    executor,
    clock,
    accounts,
    plans: config.plans,
    meter,
    logger,
    eventRetentionMs: config.eventRetentionMs,
    backup: backupTo && { dataDir: config.dataDir, run: backupTo },
    secrets,
  };
  let stopping: Promise<void> | undefined;
  const ops: OpsOptions = {
    readiness: {
      migrationStatus: () => driver.migrationStatus(),
      storageFull: driver.storageFull && (() => driver.storageFull?.() ?? false),
      stopping: () => stopping !== undefined,
      logger,
    },
    logRequests: config.logLevel === 'debug',
    requestTimeoutMs: config.requestTimeoutMs,
  };
  const metricsEndpoint = {
    scrape: () => metrics.scrape(),
    contentType: metrics.contentType,
    token: config.metricsToken,
  };
  const server = buildServer(
    {
      executor,
      clock,
      accounts,
      publisher,
      admission: new PublishAdmission(
        {
          maxWaitMs: config.publishWaitLimitMs,
          maxPendingMessages: config.publishQueueLimit,
          now: () => clock.now(),
        },
        (reason) => metrics.publishRefused(reason),
      ),
      logger,
      prefix: config.headerPrefix,
      production: config.production,
      onMessagesStored: wake,
      onSchedulesChanged: () => scheduler.wake(),
      requestCaps: { messages: config.maxRequestMessages, bytes: config.maxRequestBytes },
      usage,
      metrics,
      monthCount: (accountId, metric, now) => meter.monthCount(accountId, metric, now),
      dayCount: (accountId, metric, now) => meter.dayCount(accountId, metric, now),
    },
    {
      bodyLimit: Math.max(config.plans.free.max_message_size, config.plans.paid.max_message_size),
      management: config.mgmtPort === undefined ? management : undefined,
      ops: { ...ops, metrics: config.metricsPort === undefined ? metricsEndpoint : undefined },
      console: config.console,
      usage: { plans: config.plans, flush: async () => void (await meter.runOnce()) },
    },
  );
  const mgmtServer =
    config.mgmtPort === undefined
      ? undefined
      : buildManagementServer(
          management,
          ops,
          config.console ? { headerPrefix: config.headerPrefix } : undefined,
        );
  const opsServer =
    config.metricsPort === undefined
      ? undefined
      : buildOpsServer(logger, { ...ops, metrics: metricsEndpoint });

  const roles = new Set(config.roles);
  let unlisten: (() => Promise<void>) | undefined;

  const ferry: Ferry = {
    config,
    driver,
    accounts,
    secrets,
    publisher,
    engine,
    scheduler,
    pruner,
    server,
    meter,
    mgmtServer,
    opsServer,
    metrics,
    url: '',
    mgmtUrl: '',
    metricsUrl: '',
    async start() {
      meter.start();
      // Whatever the roles: a worker-only node is scraped and probed here too.
      if (opsServer) {
        ferry.metricsUrl = await listen(opsServer, config.metricsPort ?? 0, config.host);
      }
      if (roles.has('worker')) {
        dispatcher.warm?.();
        unlisten = await driver.listenWake((dueAt) => engine.wakeAt(dueAt ?? 0));
        engine.start();
      }
      if (roles.has('scheduler')) scheduler.start();
      if (roles.has('maintenance')) pruner.start();
      if (roles.has('api')) {
        ferry.url = await listen(server, config.port, config.host);
        ferry.mgmtUrl = ferry.url;
        if (mgmtServer) ferry.mgmtUrl = await listen(mgmtServer, config.mgmtPort ?? 0, config.host);
        if (!opsServer) ferry.metricsUrl = ferry.url;
      }
    },
    stop() {
      stopping ??= (async () => {
        // Stops accepting; waits for in-flight requests (their commits).
        await closeWithin(server, config.shutdownGraceMs);
        await scheduler.stop(); // a tick being fired commits (or rolls back) first
        if (mgmtServer) await closeWithin(mgmtServer, config.shutdownGraceMs);
        await publisher.drain();
        await engine.stop(config.shutdownGraceMs);
        await pruner.stop();
        await meter.stop(); // flushes the last counts, including the engine's final outcomes
        await unlisten?.();
        await dispatcher.close();
        await driver.close();
        // Last: /ready answers 503 (shutting down) until here.
        if (opsServer) await closeWithin(opsServer, config.shutdownGraceMs);
      })();
      return stopping;
    },
  };
  return ferry;
}

/**
 * Closes a server: requests in flight may finish for `graceMs`; connections still open after it
 * are cut. Fastify closes idle keep-alive connections at once, but waits without end for an
 * answer a client does not read (a large page or console asset it stopped reading), and a stop
 * must not hang on that.
 */
async function closeWithin(server: FastifyInstance, graceMs: number): Promise<void> {
  const cut = setTimeout(() => server.server.closeAllConnections(), graceMs);
  try {
    await server.close();
  } finally {
    clearTimeout(cut);
  }
}

/**
 * Listens and returns the server's URL (`http://host:port`, IPv6 hosts bracketed). A wildcard
 * address (`0.0.0.0`, `::`) is no address to connect to: the URL names this machine's loopback,
 * which the banner, credentials.json and the client commands then use.
 */
async function listen(server: FastifyInstance, port: number, host: string): Promise<string> {
  const address = await server.listen({ port, host });
  const { port: bound } = server.server.address() as { port: number };
  const reachable = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '::1' : host;
  const shown = reachable.includes(':') ? `[${reachable}]` : reachable;
  return address.startsWith('http') ? `http://${shown}:${bound}` : address;
}
