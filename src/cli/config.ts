/**
 * Ferry's settings: each has a flag, an environment variable and a default, in that order of
 * precedence. `docs/configuration.md` lists them; keep the two in step.
 */
import { Command, CommanderError, Option as CommandOption } from 'commander';
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { isIP } from 'node:net';
import { resolve } from 'node:path';
import { isPlanName, resolvePlans, type PlanTable } from '../core/plans.js';
import type { PlanName } from '../core/types.js';
import { parseDuration } from '../core/duration.js';
import { commanderMessage, UsageError } from './errors.js';
import { parseSecretKey } from '../core/secret-box.js';

/**
 * `api` serves HTTP, `worker` delivers messages, `scheduler` fires cron schedules, `maintenance`
 * prunes the log, the DLQ and deduplication keys.
 */
export type Role = 'api' | 'worker' | 'scheduler' | 'maintenance';
const ROLES: readonly Role[] = ['api', 'worker', 'scheduler', 'maintenance'];

export interface Config {
  /** TCP port of the HTTP API; 0 picks a free port (the real one goes to credentials.json). */
  port: number;
  /**
   * A port of its own for the management API (`/v2/queue…`, `/v2/search…`, `/v2/admin…`), on
   * the same host; absent = served on `port` beside the messaging API. 0 picks a free port.
   */
  mgmtPort?: number;
  /** How often metered usage is flushed to storage (a crash loses at most this much). */
  meteringFlushMs: number;
  host: string;
  /** Holds the SQLite database and credentials.json. */
  dataDir: string;
  /** A `postgres://` URL switches storage to PostgreSQL; absent = SQLite in `dataDir`. */
  databaseUrl?: string;
  /** PostgreSQL schema holding Ferry's tables (created if missing), so deployments can share a database. */
  databaseSchema: string;
  /**
   * PostgreSQL: longest wait for the database, ms. A request waiting longer is answered 503
   * with Retry-After instead of hanging on a server that stopped answering.
   */
  databaseTimeoutMs: number;
  /**
   * SQLite: largest size of the database file, bytes (`max_page_count`); absent = no limit but
   * the disk's. Writes beyond it fail as on a full disk (503, nothing stored).
   */
  sqliteMaxSize?: number;
  /** Prefix of every custom header (`Svc-Retries`); `Upstash` speaks the QStash SDK dialect. */
  headerPrefix: string;
  /** Refuses private, loopback and link-local destinations. */
  production: boolean;
  /** Plan of the default account created at first start. */
  plan: PlanName;
  plans: PlanTable;
  /** Which services this node runs; all by default. */
  roles: Role[];
  /** Deliveries in flight at once on this node. */
  concurrency: number;
  /**
   * Deliveries in flight at once per destination origin on this node (0: no limit), so one
   * destination that hangs cannot hold every `concurrency` slot. Default: a quarter of
   * `concurrency`. See docs/configuration.md#fairness-between-destinations.
   */
  originConcurrency: number;
  /**
   * A destination at its `originConcurrency` whose oldest delivery has run this long is
   * stalled: its other messages go back to storage for a while instead of waiting in slots.
   */
  originStallMs: number;
  /**
   * Attempts per second to a destination origin whose last attempts all failed (0: no pacing);
   * its other due messages are spread at this rate. See
   * docs/configuration.md#fairness-between-destinations.
   */
  originFailureRate: number;
  /**
   * Run the HTTP side of deliveries on a thread of its own (see engine/worker-dispatcher.ts).
   * `auto` (the default) resolves to true when the machine has more than one CPU.
   */
  deliveryThread: boolean;
  /**
   * Largest workflow history sent inline with a step delivery, bytes. A longer one goes as an
   * empty body and the workflow SDK fetches it (`GET /v2/workflows/runs/{id}`).
   */
  workflowInlineHistoryBytes: number;
  /**
   * Most messages one request may create (a publish to a URL group, a batch, a DLQ retry):
   * beyond it the request is refused with 413 and nothing is stored. Bounds the work and the
   * writes a single request can cause (docs/limits.md, "Limits per request").
   */
  maxRequestMessages: number;
  /**
   * Most body bytes one request may store, counted per message (a 1 MiB body to 200 endpoints
   * is 200 MiB); 413 beyond it.
   */
  maxRequestBytes: number;
  /**
   * Load shedding (api/admission.ts): refuse publishes with 503 while the oldest publish waiting
   * for its commit on this node has waited this long, ms; 0 = no wait limit.
   */
  publishWaitLimitMs: number;
  /** Load shedding: most messages waiting for their commit on this node; 0 = no limit. */
  publishQueueLimit: number;
  /** How long a claimed message stays leased without a heartbeat; a dead node's messages are re-delivered after it. */
  leaseMs: number;
  /** SQLite `synchronous`: `full` (an fsync per commit, the default) or `normal` (faster; the last commits may be lost on power loss, never on a process crash). */
  sqliteSynchronous: 'full' | 'normal';
  /** How long the events log keeps entries. */
  eventRetentionMs: number;
  /** How long SIGTERM waits for in-flight deliveries before releasing them for redelivery. */
  shutdownGraceMs: number;
  /**
   * The longest a client may take to send one whole request (headers and body), ms: past it the
   * request is answered 408 and its connection closed. Without it a body that stops arriving
   * holds its connection and buffered bytes forever (Fastify turns Node's request timeout off).
   * Headers alone get at most 60 s of it.
   */
  requestTimeoutMs: number;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'silent';
  /** `json` (one JSON object per line, for log collectors) or `pretty` (for a terminal). */
  logFormat: 'json' | 'pretty';
  /**
   * A port of its own for `/metrics` (with `/ready` and `/health`), on the same host, served
   * whatever the node's roles; absent = `/metrics` on `port`. 0 picks a free port.
   */
  metricsPort?: number;
  /** Bearer token `/metrics` requires; absent = open (keep it on a private network). */
  metricsToken?: string;
  /** Label the per-account counters with the account id: one series per account, so only with few accounts. */
  metricsAccountLabel: boolean;
  /**
   * The AES-256 key that seals stored secrets (core/secret-box.ts): 32 bytes, given as 64 hex
   * digits or base64. Absent: with SQLite, Ferry creates `<dataDir>/secret.key` at first start;
   * PostgreSQL requires it, since every node must open what another sealed (cli/secret-key.ts).
   */
  secretKey?: Buffer;
  /** Serve the web console at `/console` on the main port (on by default). */
  console: boolean;
}

/**
 * One setting of `ferry start`. To add one: a line here (`help` is its `--help` text, `arg` the
 * name of its value), a field in {@link Config} read in {@link resolveConfig}, and a row in
 * docs/configuration.md. The flag is parsed by commander; the environment variable and the
 * default are applied in `resolveConfig` (commander's own `.env()` would treat an empty variable
 * as set and `FERRY_ENV=development` as on).
 */
export interface Option {
  flag: string;
  env: string;
  /** Boolean flags take no value (`--production`). */
  boolean?: boolean;
  /** Name of the value in `--help` (`--port <N>`); default `value`. */
  arg?: string;
  /** One line for `--help`, with the default. */
  help?: string;
}

export const OPTIONS = {
  port: { flag: 'port', env: 'FERRY_PORT', arg: 'N', help: 'API port, 0 = any free port (8080)' },
  mgmtPort: {
    flag: 'mgmt-port',
    env: 'FERRY_MGMT_PORT',
    arg: 'N',
    help: 'management API on a port of its own (on --port)',
  },
  meteringFlush: {
    flag: 'metering-flush',
    env: 'FERRY_METERING_FLUSH',
    arg: 'D',
    help: 'how often usage is written (5s)',
  },
  host: { flag: 'host', env: 'FERRY_HOST', arg: 'H', help: 'listen address (127.0.0.1)' },
  dataDir: {
    flag: 'data-dir',
    env: 'FERRY_DATA_DIR',
    arg: 'D',
    help: 'SQLite database and credentials.json (./.ferry)',
  },
  databaseUrl: {
    flag: 'database-url',
    env: 'FERRY_DATABASE_URL',
    arg: 'URL',
    help: 'postgres://… for PostgreSQL (SQLite in the data dir)',
  },
  databaseSchema: {
    flag: 'database-schema',
    env: 'FERRY_DATABASE_SCHEMA',
    arg: 'S',
    help: "PostgreSQL schema for Ferry's tables (public)",
  },
  databaseTimeout: {
    flag: 'database-timeout',
    env: 'FERRY_DATABASE_TIMEOUT',
    arg: 'D',
    help: 'PostgreSQL: longest wait for the database before a 503 (5s)',
  },
  sqliteMaxSize: {
    flag: 'sqlite-max-size',
    env: 'FERRY_SQLITE_MAX_SIZE',
    arg: 'BYTES',
    help: 'SQLite: largest database file; writes past it get 503 (no limit)',
  },
  headerPrefix: {
    flag: 'header-prefix',
    env: 'FERRY_HEADER_PREFIX',
    arg: 'P',
    help: 'prefix of custom headers; Upstash = QStash dialect (Svc)',
  },
  production: {
    flag: 'production',
    env: 'FERRY_ENV',
    boolean: true,
    help: 'refuse private/loopback destinations; FERRY_ENV=production (off)',
  },
  plan: {
    flag: 'plan',
    env: 'FERRY_PLAN',
    arg: 'free|paid',
    help: 'plan of the default account at first start (paid)',
  },
  plansFile: {
    flag: 'plans-file',
    env: 'FERRY_PLANS_FILE',
    arg: 'F',
    help: 'JSON overrides of plan limits',
  },
  roles: {
    flag: 'roles',
    env: 'FERRY_ROLES',
    arg: 'R,R',
    help: 'services of this process (api,worker,scheduler,maintenance)',
  },
  concurrency: {
    flag: 'concurrency',
    env: 'FERRY_CONCURRENCY',
    arg: 'N',
    help: 'deliveries in flight (256)',
  },
  deliveryThread: {
    flag: 'delivery-thread',
    env: 'FERRY_DELIVERY_THREAD',
    arg: 'auto|on|off',
    help: 'deliveries on a thread of their own (auto)',
  },
  workflowInlineHistory: {
    flag: 'workflow-inline-history',
    env: 'FERRY_WORKFLOW_INLINE_HISTORY',
    arg: 'BYTES',
    help: 'largest workflow history sent inline (1048576)',
  },
  lease: { flag: 'lease', env: 'FERRY_LEASE', arg: 'D', help: 'lease of a claimed message (30s)' },
  sqliteSynchronous: {
    flag: 'sqlite-synchronous',
    env: 'FERRY_SQLITE_SYNCHRONOUS',
    arg: 'S',
    help: 'full or normal (full)',
  },
  eventRetention: {
    flag: 'event-retention',
    env: 'FERRY_EVENT_RETENTION',
    arg: 'D',
    help: 'how long the events log keeps entries (7d)',
  },
  shutdownGrace: {
    flag: 'shutdown-grace',
    env: 'FERRY_SHUTDOWN_GRACE',
    arg: 'D',
    help: 'wait for in-flight deliveries and answers on stop (10s)',
  },
  requestTimeout: {
    flag: 'request-timeout',
    env: 'FERRY_REQUEST_TIMEOUT',
    arg: 'D',
    help: 'longest time a client may take to send a request, body included (60s)',
  },
  logLevel: { flag: 'log-level', env: 'FERRY_LOG_LEVEL', arg: 'L', help: 'log level (info)' },
  logFormat: {
    flag: 'log-format',
    env: 'FERRY_LOG_FORMAT',
    arg: 'json|pretty',
    help: 'log lines as JSON or for a terminal (json)',
  },
  metricsPort: {
    flag: 'metrics-port',
    env: 'FERRY_METRICS_PORT',
    arg: 'N',
    help: '/metrics on a port of its own (on --port)',
  },
  metricsToken: {
    flag: 'metrics-token',
    env: 'FERRY_METRICS_TOKEN',
    arg: 'T',
    help: 'bearer token /metrics requires (none)',
  },
  metricsAccountLabel: {
    flag: 'metrics-account-label',
    env: 'FERRY_METRICS_ACCOUNT_LABEL',
    boolean: true,
    help: 'label per-account series with the account id (off)',
  },
  secretKey: {
    flag: 'secret-key',
    env: 'FERRY_SECRET_KEY',
    arg: 'K',
    help: 'key sealing stored secrets; required with PostgreSQL (<data dir>/secret.key)',
  },
  // The flag turns the console off; the variable says whether it is on (`FERRY_CONSOLE=false`).
  noConsole: {
    flag: 'no-console',
    env: 'FERRY_CONSOLE',
    boolean: true,
    help: 'turn off the web console at /console; FERRY_CONSOLE=false (on)',
  },
  maxRequestMessages: {
    flag: 'max-request-messages',
    env: 'FERRY_MAX_REQUEST_MESSAGES',
    arg: 'N',
    help: 'most messages one request may create (10000)',
  },
  maxRequestBytes: {
    flag: 'max-request-bytes',
    env: 'FERRY_MAX_REQUEST_BYTES',
    arg: 'BYTES',
    help: 'most body bytes one request may create, counted per message (1073741824)',
  },
  publishWaitLimit: {
    flag: 'publish-wait-limit',
    env: 'FERRY_PUBLISH_WAIT_LIMIT',
    arg: 'D',
    help: 'refuse publishes (503) while one has waited this long for its commit, 0 = never (2s)',
  },
  publishQueueLimit: {
    flag: 'publish-queue-limit',
    env: 'FERRY_PUBLISH_QUEUE_LIMIT',
    arg: 'N',
    help: 'refuse publishes (503) beyond this many messages waiting for their commit, 0 = no limit (20000)',
  },
  originConcurrency: {
    flag: 'origin-concurrency',
    env: 'FERRY_ORIGIN_CONCURRENCY',
    arg: 'N',
    help: 'deliveries in flight to one destination origin, 0 = no cap (concurrency / 4)',
  },
  originStall: {
    flag: 'origin-stall',
    env: 'FERRY_ORIGIN_STALL',
    arg: 'D',
    help: 'an origin at its cap this long is held back (1s)',
  },
  originFailureRate: {
    flag: 'origin-failure-rate',
    env: 'FERRY_ORIGIN_FAILURE_RATE',
    arg: 'N',
    help: 'attempts per second to an origin whose last 10 attempts failed, 0 = no pacing (50)',
  },
} satisfies Record<string, Option>;

type OptionName = keyof typeof OPTIONS;

/** Defaults of `--max-request-messages` and `--max-request-bytes` (1 GiB). */
export const DEFAULT_MAX_REQUEST_MESSAGES = 10_000;
export const DEFAULT_MAX_REQUEST_BYTES = 1024 * 1024 * 1024;

/** Thrown for a bad flag or value; the CLI prints the message and exits with status 2. */
export class ConfigError extends UsageError {}

/** Adds every setting of {@link OPTIONS} to `command` as a flag (`ferry start`, `ferry users`). */
export function addConfigOptions(command: Command): Command {
  for (const option of Object.values(OPTIONS) as Option[]) {
    const flags = option.boolean
      ? `--${option.flag}`
      : `--${option.flag} <${option.arg ?? 'value'}>`;
    command.addOption(new CommandOption(flags, `${option.help ?? ''} [${option.env}]`.trim()));
  }
  return command;
}

/** The settings flags given on `command`'s command line, by flag name (`'true'` for a boolean). */
export function givenFlags(command: Command): Map<string, string> {
  const flags = new Map<string, string>();
  for (const option of command.options) {
    const name = option.attributeName();
    if (option.long === undefined || command.getOptionValueSource(name) !== 'cli') continue;
    const value: unknown = command.getOptionValue(name);
    // A negated flag (`--no-x`) stores false: it was given, so it counts as on.
    flags.set(option.long.slice(2), typeof value === 'boolean' ? 'true' : String(value));
  }
  return flags;
}

/**
 * Parses `--name value`, `--name=value` and boolean `--name` with commander; rejects unknown
 * flags and stray arguments with a {@link ConfigError}.
 */
export function parseFlags(argv: readonly string[]): Map<string, string> {
  const command = addConfigOptions(new Command('start'))
    .exitOverride()
    .configureOutput({ writeErr: () => undefined, writeOut: () => undefined });
  try {
    command.parse(argv, { from: 'user' });
  } catch (error) {
    if (error instanceof CommanderError) throw new ConfigError(commanderMessage(error));
    throw error;
  }
  return givenFlags(command);
}

function databaseSchema(value: string | undefined, option: string): string {
  const schema = value ?? 'public';
  if (!/^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(schema)) {
    throw new ConfigError(
      `${option} must be a plain SQL identifier (letters, digits, _), got "${schema}"`,
    );
  }
  return schema;
}

/**
 * An address `listen` can take: an IP address, or a host name made of DNS labels. All-numeric
 * dotted names (`999.1.1.1`) are not host names: they are IPv4 addresses, checked as such.
 */
function isListenHost(host: string): boolean {
  if (isIP(host) !== 0) return true;
  if (/^[\d.]+$/.test(host)) return false;
  return /^(?=.{1,253}$)[a-z\d]([a-z\d-]{0,61}[a-z\d])?(\.[a-z\d]([a-z\d-]{0,61}[a-z\d])?)*\.?$/i.test(
    host,
  );
}

/**
 * Refuses a SQLite node that leaves roles out: the database file belongs to one process, so no
 * other process could run them. Checked by `ferry start` (tests build PostgreSQL nodes from
 * flags and hand them their driver, so {@link resolveConfig} cannot tell).
 */
export function checkRolesForStorage(config: Pick<Config, 'roles' | 'databaseUrl'>): void {
  const missing = ROLES.filter((role) => !config.roles.includes(role));
  if (config.databaseUrl === undefined && missing.length > 0) {
    throw new ConfigError(
      `--roles/FERRY_ROLES: with SQLite one process runs every role (${missing.join(', ')} ` +
        'would run nowhere); splitting roles needs PostgreSQL (--database-url/FERRY_DATABASE_URL)',
    );
  }
}

function consoleOn(flags: ReadonlyMap<string, string>, env: NodeJS.ProcessEnv): boolean {
  if (flags.has(OPTIONS.noConsole.flag)) return false;
  const text = env[OPTIONS.noConsole.env] || 'true';
  if (text === 'true' || text === '1') return true;
  if (text === 'false' || text === '0') return false;
  throw new ConfigError(`${OPTIONS.noConsole.env} must be true or false, got "${text}"`);
}

/** The settings from command-line arguments (tests and `ferry users create`). */
export function loadConfig(
  argv: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
  cwd: string = process.cwd(),
  cpus: number = availableParallelism(),
): Config {
  return resolveConfig(parseFlags(argv), env, cwd, cpus);
}

/** The settings from parsed flags (see {@link givenFlags}), the environment and the defaults. */
export function resolveConfig(
  flags: ReadonlyMap<string, string>,
  env: NodeJS.ProcessEnv = process.env,
  cwd: string = process.cwd(),
  cpus: number = availableParallelism(),
): Config {
  const get = (name: OptionName): string | undefined => {
    const option: Option = OPTIONS[name];
    return flags.get(option.flag) ?? (env[option.env] === '' ? undefined : env[option.env]);
  };
  const describe = (name: OptionName): string => {
    const option: Option = OPTIONS[name];
    return `--${option.flag}/${option.env}`;
  };
  const integer = (name: OptionName, fallback: number, min: number, max: number): number => {
    const text = get(name);
    if (text === undefined) return fallback;
    const value = Number(text);
    if (!/^\d+$/.test(text) || value < min || value > max) {
      throw new ConfigError(
        `${describe(name)} must be an integer from ${min} to ${max}, got "${text}"`,
      );
    }
    return value;
  };
  const duration = (name: OptionName, fallback: string, minMs = 0): number => {
    let ms: number;
    try {
      ms = parseDuration(get(name) ?? fallback, describe(name));
    } catch (error) {
      throw new ConfigError((error as Error).message);
    }
    if (ms < minMs) throw new ConfigError(`${describe(name)} must be at least ${minMs / 1000}s`);
    return ms;
  };
  const oneOf = <T extends string>(name: OptionName, allowed: readonly T[], fallback: T): T => {
    const text = get(name) ?? fallback;
    if (!(allowed as readonly string[]).includes(text)) {
      throw new ConfigError(
        `${describe(name)} must be one of ${allowed.join(', ')}, got "${text}"`,
      );
    }
    return text as T;
  };

  // A switch takes only the words below: a typo (`FERRY_ENV=prod`) must not quietly leave
  // production's refusal of private destinations off.
  const onOff = (name: OptionName, on: readonly string[], off: readonly string[]): boolean => {
    const text = get(name);
    if (text === undefined || off.includes(text)) return false;
    if (on.includes(text)) return true;
    throw new ConfigError(
      `${describe(name)} must be one of ${[...on, ...off].join(', ')}, got "${text}"`,
    );
  };
  const production = onOff(
    'production',
    ['production', 'true', '1'],
    ['development', 'false', '0'],
  );

  const host = get('host') ?? '127.0.0.1';
  if (!isListenHost(host)) {
    throw new ConfigError(
      `${describe('host')} must be an IP address or a host name, got "${host}"`,
    );
  }

  const prefix = get('headerPrefix') ?? 'Svc';
  if (!/^[A-Za-z][A-Za-z0-9]*$/.test(prefix)) {
    throw new ConfigError(
      `${describe('headerPrefix')} must be letters and digits, got "${prefix}"`,
    );
  }

  const plan = get('plan') ?? 'paid';
  if (!isPlanName(plan)) throw new ConfigError(`${describe('plan')} must be free or paid`);

  let plans: PlanTable;
  const plansFile = get('plansFile');
  try {
    plans = resolvePlans(
      plansFile ? JSON.parse(readFileSync(resolve(cwd, plansFile), 'utf8')) : undefined,
    );
  } catch (error) {
    throw new ConfigError(`${describe('plansFile')}: ${(error as Error).message}`);
  }

  const roles = (get('roles') ?? ROLES.join(',')).split(',').map((r) => r.trim());
  for (const role of roles) {
    if (!(ROLES as readonly string[]).includes(role)) {
      throw new ConfigError(
        `${describe('roles')}: unknown role "${role}" (known: ${ROLES.join(', ')})`,
      );
    }
  }

  const databaseUrl = get('databaseUrl');
  if (databaseUrl !== undefined && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new ConfigError(`${describe('databaseUrl')} must be a postgres:// URL`);
  }

  // The value is a secret: the error names the option and the expected form, never the value.
  const secretKeyText = get('secretKey');
  const secretKey = secretKeyText === undefined ? undefined : parseSecretKey(secretKeyText);
  if (secretKeyText !== undefined && !secretKey) {
    throw new ConfigError(
      `${describe('secretKey')} must be 32 bytes as 64 hex digits or base64 (openssl rand -base64 32)`,
    );
  }

  const concurrency = integer('concurrency', 256, 1, 100_000);
  return {
    port: integer('port', 8080, 0, 65_535),
    mgmtPort: get('mgmtPort') === undefined ? undefined : integer('mgmtPort', 0, 0, 65_535),
    meteringFlushMs: duration('meteringFlush', '5s', 1_000),
    host,
    dataDir: resolve(cwd, get('dataDir') ?? '.ferry'),
    databaseUrl,
    databaseSchema: databaseSchema(get('databaseSchema'), describe('databaseSchema')),
    databaseTimeoutMs: duration('databaseTimeout', '5s', 1_000),
    sqliteMaxSize:
      get('sqliteMaxSize') === undefined
        ? undefined
        : integer('sqliteMaxSize', 0, 64 * 1024, Number.MAX_SAFE_INTEGER),
    headerPrefix: prefix,
    production,
    plan,
    plans,
    roles: roles as Role[],
    concurrency,
    originConcurrency: integer(
      'originConcurrency',
      Math.max(1, Math.floor(concurrency / 4)),
      0,
      100_000,
    ),
    originStallMs: duration('originStall', '1s', 1),
    originFailureRate: integer('originFailureRate', 50, 0, 100_000),
    deliveryThread: {
      auto: cpus > 1,
      on: true,
      off: false,
    }[oneOf('deliveryThread', ['auto', 'on', 'off'], 'auto')],
    workflowInlineHistoryBytes: integer('workflowInlineHistory', 1024 * 1024, 0, 100 * 1024 * 1024),
    maxRequestMessages: integer('maxRequestMessages', DEFAULT_MAX_REQUEST_MESSAGES, 1, 10_000_000),
    maxRequestBytes: integer('maxRequestBytes', DEFAULT_MAX_REQUEST_BYTES, 1, 2 ** 50),
    publishWaitLimitMs: duration('publishWaitLimit', '2s'),
    publishQueueLimit: integer('publishQueueLimit', 20_000, 0, 10_000_000),
    // A lease shorter than a second would expire while deliveries are still in flight.
    leaseMs: duration('lease', '30s', 1_000),
    sqliteSynchronous: oneOf('sqliteSynchronous', ['full', 'normal'], 'full'),
    eventRetentionMs: duration('eventRetention', '7d'),
    shutdownGraceMs: duration('shutdownGrace', '10s'),
    requestTimeoutMs: duration('requestTimeout', '60s', 1_000),
    console: consoleOn(flags, env),
    logLevel: oneOf('logLevel', ['fatal', 'error', 'warn', 'info', 'debug', 'silent'], 'info'),
    logFormat: oneOf('logFormat', ['json', 'pretty'], 'json'),
    metricsPort:
      get('metricsPort') === undefined ? undefined : integer('metricsPort', 0, 0, 65_535),
    metricsToken: get('metricsToken'),
    metricsAccountLabel: onOff('metricsAccountLabel', ['true', '1'], ['false', '0']),
    secretKey,
  };
}
