#!/usr/bin/env node
/**
 * The `ferry` command. `ferry start [options]` runs the API, the delivery engine and maintenance
 * in one process; SIGTERM/SIGINT stop it gracefully (a second signal exits at once).
 */
import pino from 'pino';
import { createUser } from '../api/mgmt/users.js';
import { createFerry, openDriver } from '../app.js';
import { FerryError } from '../core/errors.js';
import { systemClock } from '../core/clock.js';
import { ConfigError, loadConfig, type Config } from './config.js';
import type { Account } from '../core/types.js';
import { credentialsPath, ensureDefaultAccount, type Credentials } from './credentials.js';

const USAGE = `Usage: ferry start [options]
       ferry users create --email E [--admin] [storage options]

Options (flag / environment variable, default):
  --port N               FERRY_PORT             8080 (0 = any free port)
  --mgmt-port N          FERRY_MGMT_PORT        (management API on the main port)
  --metering-flush D     FERRY_METERING_FLUSH   5s
  --host H               FERRY_HOST             127.0.0.1
  --data-dir D           FERRY_DATA_DIR         ./.ferry
  --database-url URL     FERRY_DATABASE_URL     (SQLite in the data dir; postgres://… for PostgreSQL)
  --database-schema S    FERRY_DATABASE_SCHEMA  public (PostgreSQL schema for Ferry's tables)
  --header-prefix P      FERRY_HEADER_PREFIX    Svc (Upstash = QStash SDK dialect)
  --production           FERRY_ENV=production   off (refuses private/loopback destinations)
  --plan free|paid       FERRY_PLAN             paid (plan of the default account at first start)
  --plans-file F         FERRY_PLANS_FILE       (JSON overrides of plan limits)
  --roles R,R            FERRY_ROLES            api,worker,scheduler,maintenance
  --concurrency N        FERRY_CONCURRENCY      256 deliveries in flight
  --lease D              FERRY_LEASE            30s
  --sqlite-synchronous S FERRY_SQLITE_SYNCHRONOUS full (or normal)
  --event-retention D    FERRY_EVENT_RETENTION  7d
  --shutdown-grace D     FERRY_SHUTDOWN_GRACE   10s
  --log-level L          FERRY_LOG_LEVEL        info
  --no-console           FERRY_CONSOLE=false    (the web console at /console is on)
See docs/configuration.md for details.`;

function banner(
  config: Config,
  credentials: Credentials,
  account: Account,
  created: boolean,
  serving: boolean,
): string {
  const storage = config.databaseUrl ? 'PostgreSQL' : `SQLite in ${config.dataDir}`;
  const mode = config.production
    ? 'production (private and loopback destinations refused)'
    : 'development (private and loopback destinations allowed)';
  const roles = config.roles.join(', ');
  return [
    '',
    serving
      ? `  Ferry is running at ${credentials.baseUrl} (${roles})`
      : `  Ferry is running without an API on this node (${roles})`,
    `  storage:  ${storage}`,
    `  mode:     ${mode}`,
    `  headers:  ${config.headerPrefix}-*`,
    ...(serving && config.console ? [`  console:  ${credentials.baseUrl}/console`] : []),
    '',
    `  ${created ? 'Created' : 'Using'} the default account ${credentials.accountId} (plan ${account.plan}):`,
    `    token:               ${credentials.token}`,
    `    current signing key: ${credentials.currentSigningKey}`,
    `    next signing key:    ${credentials.nextSigningKey}`,
    `  Management API at ${credentials.mgmtUrl || '(not served on this node)'}:`,
    `    email:   ${credentials.email}`,
    `    api key: ${credentials.apiKey}`,
    `  (saved in ${credentialsPath(config.dataDir)})`,
    '',
    `  Try: curl -X POST ${credentials.baseUrl}/v2/publish/https://example.com \\`,
    `         -H "Authorization: Bearer ${credentials.token}" -d hello`,
    '',
  ].join('\n');
}

async function start(argv: string[]): Promise<void> {
  const config = loadConfig(argv);
  const logger = pino({ level: config.logLevel, base: undefined });
  const ferry = await createFerry({ config, logger });

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

  await ferry.start();
  const { credentials, account, created } = await ensureDefaultAccount({
    dataDir: config.dataDir,
    baseUrl: ferry.url,
    mgmtUrl: ferry.mgmtUrl,
    plan: config.plan,
    executor: ferry.driver.executor,
    accounts: ferry.accounts,
    clock: systemClock,
    logger,
  });
  const serving = config.roles.includes('api');
  process.stdout.write(`${banner(config, credentials, account, created, serving)}\n`);
}

/**
 * `ferry users create --email E [--admin]`: creates a management user in the storage the other
 * options name (the server need not run) and prints `{"email", "api_key"}`.
 */
async function users(argv: string[]): Promise<void> {
  const [sub, ...rest] = argv;
  if (sub !== 'create')
    throw new ConfigError(`unknown users command "${sub ?? ''}" (known: create)`);
  let email: string | undefined;
  let admin = false;
  const storageFlags: string[] = [];
  for (let i = 0; i < rest.length; i++) {
    const arg = rest[i] ?? '';
    if (arg === '--admin') admin = true;
    else if (arg === '--email') email = rest[++i];
    else if (arg.startsWith('--email=')) email = arg.slice('--email='.length);
    else storageFlags.push(arg);
  }
  if (email === undefined) throw new ConfigError('users create needs --email <address>');
  const config = loadConfig(storageFlags);
  const driver = openDriver(config);
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

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  if (command === undefined || command === '--help' || command === 'help' || command === '-h') {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  if (command === 'users') {
    await users(rest);
    return;
  }
  if (command !== 'start') {
    process.stderr.write(`unknown command "${command}"\n\n${USAGE}\n`);
    process.exit(2);
  }
  await start(rest);
}

main(process.argv.slice(2)).catch((error: unknown) => {
  if (error instanceof ConfigError) {
    process.stderr.write(`ferry: ${error.message}\n`);
    process.exit(2);
  }
  process.stderr.write(
    `ferry: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exit(1);
});
