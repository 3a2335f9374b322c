/**
 * Starts a real Ferry in-process for a test: real HTTP API on 127.0.0.1, real storage (SQLite on
 * a temp file by default, or PostgreSQL on a fresh schema), a fresh account, and an SDK client.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { createFerry, openDriver, type Ferry } from '../../src/app.js';
import { loadConfig, type Config } from '../../src/cli/config.js';
import { createAccount } from '../../src/cli/credentials.js';
import type { Clock } from '../../src/core/clock.js';
import { silentLogger, type Logger } from '../../src/core/logger.js';
import type { Account, PlanName } from '../../src/core/types.js';
import type { Driver } from '../../src/storage/driver.js';
import type { Dispatcher } from '../../src/engine/dispatcher.js';
import { openPostgresDriver } from '../../src/storage/postgres/postgres-driver.js';
import { FerryClient } from '../../src/sdk/index.js';

export interface TestFerryOptions {
  /** Settings as flags (`['--header-prefix', 'Upstash']`). */
  args?: string[];
  clock?: Clock;
  plan?: PlanName;
  /** Start the engine's loop (default true); with false, tests drive it with `engine.runOnce()`. */
  engine?: boolean;
  /** Storage: SQLite file (default) or PostgreSQL on a fresh schema of TEST_DATABASE_URL. */
  storage?: 'sqlite' | 'postgres';
  /** The PostgreSQL schema to create (storage `postgres`); a random `ferry_test_…` by default. */
  schemaName?: string;
  /** The server's logger (default silent; errors on stderr with TEST_LOG set). */
  logger?: Logger;
  /** A storage driver opened by the test (instead of `storage`). */
  driver?: Driver;
  /** Wraps the storage driver before Ferry uses it (to act at a chosen operation). */
  wrapDriver?: (driver: Driver) => Driver;
  /** The delivery dispatcher (instead of the one the config builds). */
  dispatcher?: Dispatcher;
  /** Changes the loaded config before Ferry starts (values flags cannot spell, like 300 ms). */
  configure?: (config: Config) => void;
}

export interface TestFerry {
  ferry: Ferry;
  config: Config;
  url: string;
  token: string;
  account: Account;
  client: FerryClient;
  /** The PostgreSQL schema of this Ferry (storage `postgres`), for a second node on it. */
  schema?: string;
  /** fetch against the API with the account's token. */
  api(path: string, init?: RequestInit): Promise<Response>;
  close(): Promise<void>;
}

export const pgUrl = process.env.TEST_DATABASE_URL;

/** The storages end-to-end suites run on: SQLite always, PostgreSQL when TEST_DATABASE_URL is set. */
export const STORAGES: ('sqlite' | 'postgres')[] = pgUrl ? ['sqlite', 'postgres'] : ['sqlite'];

export async function startFerry(options: TestFerryOptions = {}): Promise<TestFerry> {
  const dataDir = mkdtempSync(join(tmpdir(), 'ferry-test-'));
  const schema =
    options.storage === 'postgres'
      ? (options.schemaName ?? `ferry_test_${randomBytes(6).toString('hex')}`)
      : undefined;
  // The data directory and schema go when the test is done with them, and also when the start
  // throws (a bad option, a missing build): a failed test must not leave them behind.
  const discard = async (): Promise<void> => {
    if (schema && pgUrl) {
      const { default: postgres } = await import('postgres');
      const sql = postgres(pgUrl, { onnotice: () => undefined });
      await sql.unsafe(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await sql.end();
    }
    rmSync(dataDir, { recursive: true, force: true });
  };
  let config: Config;
  let ferry: Ferry;
  let driver: Driver | undefined = options.driver;
  try {
    config = loadConfig(
      ['--port', '0', '--data-dir', dataDir, '--log-level', 'silent', ...(options.args ?? [])],
      {},
    );
    if (options.engine === false) config.roles = ['api'];
    options.configure?.(config);
    if (schema) {
      if (!pgUrl) throw new Error('TEST_DATABASE_URL is not set');
      driver = openPostgresDriver({ url: pgUrl, schema, timeoutMs: config.databaseTimeoutMs });
    }
    if (options.wrapDriver) driver = options.wrapDriver(driver ?? openDriver(config));
    ferry = await started(config, options, driver);
  } catch (error) {
    await driver?.close().catch(() => undefined);
    await discard();
    throw error;
  }
  const { account, token } = await createAccount({
    executor: ferry.driver.executor,
    plan: options.plan ?? 'paid',
    now: (options.clock ?? { now: Date.now }).now(),
    secrets: ferry.secrets,
  });
  const prefix = config.headerPrefix;
  return {
    ferry,
    config,
    url: ferry.url,
    token,
    account,
    client: new FerryClient({ baseUrl: ferry.url, token, headerPrefix: prefix }),
    schema,
    api: (path, init = {}) =>
      fetch(`${ferry.url}${path}`, {
        ...init,
        headers: { authorization: `Bearer ${token}`, ...(init.headers as Record<string, string>) },
      }),
    async close() {
      await ferry.stop();
      await discard();
    },
  };
}

/** A node built from `config` and started. */
async function started(
  config: Config,
  options: TestFerryOptions,
  driver: Driver | undefined,
): Promise<Ferry> {
  const ferry = await createFerry({
    config,
    logger:
      options.logger ??
      (process.env.TEST_LOG
        ? { ...silentLogger, error: (o: object | string, m?: string) => console.error(m, o) }
        : silentLogger),
    clock: options.clock,
    driver,
    dispatcher: options.dispatcher,
  });
  await ferry.start();
  return ferry;
}

/**
 * A second node (API role only) on the PostgreSQL schema of `first`, started, with the same
 * clock: for tests of what several nodes share. Stop it before closing `first`.
 */
export async function startSecondNode(
  first: TestFerry,
  clock: Clock,
  args: string[] = [],
): Promise<Ferry> {
  if (!pgUrl || !first.schema) throw new Error('a second node needs PostgreSQL storage');
  const config = loadConfig(
    ['--port', '0', '--data-dir', first.config.dataDir, '--roles', 'api', ...args],
    {},
  );
  const node = await createFerry({
    config,
    clock,
    logger: silentLogger,
    driver: openPostgresDriver({ url: pgUrl, schema: first.schema }),
  });
  await node.start();
  return node;
}
