/**
 * What `ferry start` and `ferry users create` run. Loaded only by those commands (main.ts imports
 * it lazily), so that a client command such as `ferry dlq list` does not load the server.
 */
import pino from 'pino';
import pretty from 'pino-pretty';
import { createUser } from '../api/mgmt/users.js';
import { createFerry, openDriver } from '../app.js';
import { FerryError } from '../core/errors.js';
import { systemClock } from '../core/clock.js';
import { checkRolesForStorage, ConfigError, type Config } from './config.js';
import type { Account } from '../core/types.js';
import type { Logger } from '../core/logger.js';
import { credentialsPath, ensureDefaultAccount, type Credentials } from './credentials.js';
import { tuneHeapGrowth } from './heap-growth.js';
import { isConnectionLoss } from '../storage/postgres/postgres-driver.js';
import { DatabaseInUseError } from '../storage/sqlite/database-lock.js';
import { VERSION } from '../core/version.js';

/**
 * What a start prints. Secrets (the token, the signing keys, the administrator's API key) are
 * printed only by the start that created them: a log collector that keeps every start's output
 * would otherwise hold them all. Later starts say where credentials.json is.
 */
function banner(p: {
  config: Config;
  credentials: Credentials;
  account: Account;
  created: boolean;
  adminCreated: boolean;
  serving: boolean;
  /** Where `/metrics` is served when it has a port of its own (`--metrics-port`). */
  metricsUrl?: string;
}): string {
  const { config, credentials, account } = p;
  const storage = config.databaseUrl ? 'PostgreSQL' : `SQLite in ${config.dataDir}`;
  const mode = config.production
    ? 'production (private and loopback destinations refused)'
    : 'development (private and loopback destinations allowed)';
  const roles = config.roles.join(', ');
  const file = credentialsPath(config.dataDir);
  const lines = [
    '',
    p.serving
      ? `  Ferry is running at ${credentials.baseUrl} (${roles})`
      : `  Ferry is running without an API on this node (${roles})`,
    `  version:  ${VERSION}`,
    `  storage:  ${storage}`,
    `  mode:     ${mode}`,
    `  headers:  ${config.headerPrefix}-*`,
    ...(p.serving && config.console ? [`  console:  ${credentials.baseUrl}/console`] : []),
    ...(p.metricsUrl ? [`  metrics:  ${p.metricsUrl}/metrics`] : []),
    '',
    `  ${p.created ? 'Created' : 'Using'} the default account ${credentials.accountId} (plan ${account.plan})` +
      (p.created ? ':' : ''),
  ];
  if (p.created) {
    lines.push(
      `    token:               ${credentials.token}`,
      `    current signing key: ${credentials.currentSigningKey}`,
      `    next signing key:    ${credentials.nextSigningKey}`,
    );
  }
  lines.push(
    `  Management API at ${credentials.mgmtUrl || '(not served on this node)'}:`,
    `    email:   ${credentials.email}`,
  );
  if (p.adminCreated) lines.push(`    api key: ${credentials.apiKey}`);
  const shown = p.created || p.adminCreated;
  lines.push(
    shown
      ? `  (saved in ${file}; printed this once)`
      : `  Token, signing keys and API key: in ${file}`,
    '',
    `  Try: curl -X POST ${credentials.baseUrl}/v2/publish/https://example.com \\`,
    p.created
      ? `         -H "Authorization: Bearer ${credentials.token}" -d hello`
      : `         -H "Authorization: Bearer $(node -p 'require("${file}").token')" -d hello`,
    '',
  );
  return lines.join('\n');
}

/** JSON lines on stdout (for log collectors), or pino-pretty's colored lines for a terminal. */
function openLogger(config: Config): pino.Logger {
  const options = { level: config.logLevel, base: undefined };
  if (config.logFormat === 'json') return pino(options);
  return pino(options, pretty({ colorize: process.stdout.isTTY, sync: true }));
}

/**
 * postgres.js 3.4.9 (the latest release) can throw from a `setImmediate` after a connection
 * closed, writing to its already-null socket (porsager/postgres#1154, #1208; fixes unreleased).
 * The exception escapes every query, so it would end the process when PostgreSQL restarts; the
 * query it belonged to was already rejected with CONNECTION_CLOSED, so this one exception is
 * logged and survived. Any other uncaught exception still ends the process, as by default.
 */
function survivePostgresNullSocketWrite(logger: Logger): void {
  process.on('uncaughtException', (error) => {
    const known =
      error instanceof TypeError &&
      error.message.includes("reading 'write'") &&
      /postgres[\\/]src[\\/]connection\.js/.test(error.stack ?? '') &&
      /nextWrite/.test(error.stack ?? '');
    if (known) {
      logger.warn(
        { err: error },
        'PostgreSQL connection closed during a write (driver bug, survived)',
      );
      return;
    }
    process.stderr.write(`${error.stack ?? String(error)}\n`);
    process.exit(1);
  });
}

/**
 * postgres.js 3.4.9 fetches the server's array types as the first statement of every new
 * connection and drops that promise (`fetchArrayTypes` in its connection.js; porsager/postgres
 * #1192, #1205, #1223, open): when the connection breaks meanwhile, as it does while PostgreSQL
 * restarts, the error is an unhandled rejection, which would end the process. The connection is
 * dropped and the next one fetches the types again, so a rejection that is a lost or refused
 * connection (Ferry's own code awaits every query) is logged and survived. Any other unhandled
 * rejection still ends the process, through the handler above.
 */
function survivePostgresTypeFetchFailure(logger: Logger): void {
  const refused = new Set(['ECONNREFUSED', 'CONNECT_TIMEOUT', '57P03']); // 57P03: cannot_connect_now
  process.on('unhandledRejection', (reason) => {
    const code = (reason as { code?: unknown } | undefined)?.code;
    if (!isConnectionLoss(reason) && !refused.has(String(code))) throw reason;
    logger.warn(
      { err: reason },
      'PostgreSQL connection lost while the driver read its types (driver bug, survived)',
    );
  });
}

export async function start(config: Config): Promise<void> {
  checkRolesForStorage(config);
  tuneHeapGrowth();
  const logger = openLogger(config);
  if (config.databaseUrl) {
    survivePostgresNullSocketWrite(logger);
    survivePostgresTypeFetchFailure(logger);
  }
  const ferry = await createFerry({ config, logger, openConnections: true });

  // Handlers go in before the port opens, so a signal that arrives as soon as the banner is
  // out (or even earlier) still stops Ferry gracefully.
  let signals = 0;
  const shutdown = (signal: string): void => {
    if (++signals > 1) process.exit(1);
    logger.info({ signal }, 'stopping: finishing in-flight deliveries');
    ferry.stop().then(
      () => {
        logger.info('stopped cleanly');
        process.exit(0);
      },
      (error: unknown) => {
        logger.error({ err: error }, 'stopping failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));

  try {
    await ferry.start();
  } catch (error) {
    const problem = listenProblem(error, config);
    if (!problem) throw error;
    await ferry.stop().catch(() => undefined);
    throw new ConfigError(problem);
  }
  const { credentials, account, created, adminCreated } = await ensureDefaultAccount({
    dataDir: config.dataDir,
    baseUrl: ferry.url,
    mgmtUrl: ferry.mgmtUrl,
    plan: config.plan,
    executor: ferry.driver.executor,
    accounts: ferry.accounts,
    clock: systemClock,
    logger,
    secrets: ferry.secrets,
  });
  const serving = config.roles.includes('api');
  process.stdout.write(
    `${banner({
      config,
      credentials,
      account,
      created,
      adminCreated,
      serving,
      metricsUrl: config.metricsPort === undefined ? undefined : ferry.metricsUrl,
    })}\n`,
  );
}

/**
 * What went wrong when a port could not be opened, naming the option to change; undefined for
 * any other failure. Node's listen errors carry the port (`EADDRINUSE`, `EACCES`) or the host
 * name it could not resolve (`ENOTFOUND`).
 */
function listenProblem(error: unknown, config: Config): string | undefined {
  const { code, port, hostname } = (error ?? {}) as {
    code?: string;
    port?: number;
    hostname?: string;
  };
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EADDRNOTAVAIL') {
    return `--host/FERRY_HOST "${hostname ?? config.host}": no such address on this machine (${code})`;
  }
  if (code !== 'EADDRINUSE' && code !== 'EACCES') return undefined;
  const option =
    port === config.mgmtPort
      ? '--mgmt-port/FERRY_MGMT_PORT'
      : port === config.metricsPort
        ? '--metrics-port/FERRY_METRICS_PORT'
        : '--port/FERRY_PORT';
  const why = code === 'EADDRINUSE' ? 'is already in use' : 'needs privileges this process lacks';
  return `${option}: port ${port ?? '?'} on ${config.host} ${why} (${code})`;
}

/**
 * `ferry users create --email E [--admin]`: creates a management user in the storage the other
 * options name (with SQLite, while no server holds the database) and prints `{"email", "api_key"}`.
 */
export async function createUserOffline(
  config: Config,
  email: string,
  admin: boolean,
): Promise<void> {
  let driver;
  try {
    driver = openDriver(config);
  } catch (error) {
    if (!(error instanceof DatabaseInUseError)) throw error;
    throw new Error(
      `${error.message}. Stop that server first, or create the user through it: ` +
        "POST /v2/admin/users with an administrator's credentials (docs/management.md)",
      { cause: error },
    );
  }
  try {
    await driver.migrate();
    const { user, apiKey } = await createUser({
      executor: driver.executor,
      email,
      admin,
      now: systemClock.now(),
    });
    process.stdout.write(`${JSON.stringify({ email: user.email, api_key: apiKey })}\n`);
  } catch (error) {
    if (error instanceof FerryError) throw new ConfigError(error.message);
    throw error;
  } finally {
    await driver.close();
  }
}
