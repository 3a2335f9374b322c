/**
 * Ferry's settings: each has a flag, an environment variable and a default, in that order of
 * precedence. `docs/configuration.md` lists them; keep the two in step.
 */
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import { isPlanName, resolvePlans, type PlanTable } from '../core/plans.js';
import type { PlanName } from '../core/types.js';
import { parseDuration } from '../core/duration.js';

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
   * Run the HTTP side of deliveries on a thread of its own (see engine/worker-dispatcher.ts).
   * `auto` (the default) resolves to true when the machine has more than one CPU.
   */
  deliveryThread: boolean;
  /**
   * Largest workflow history sent inline with a step delivery, bytes. A longer one goes as an
   * empty body and the workflow SDK fetches it (`GET /v2/workflows/runs/{id}`).
   */
  workflowInlineHistoryBytes: number;
  /** How long a claimed message stays leased without a heartbeat; a dead node's messages are re-delivered after it. */
  leaseMs: number;
  /** SQLite `synchronous`: `full` (an fsync per commit, the default) or `normal` (faster; the last commits may be lost on power loss, never on a process crash). */
  sqliteSynchronous: 'full' | 'normal';
  /** How long the events log keeps entries. */
  eventRetentionMs: number;
  /** How long SIGTERM waits for in-flight deliveries before releasing them for redelivery. */
  shutdownGraceMs: number;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'silent';
}

interface Option {
  flag: string;
  env: string;
  /** Boolean flags take no value (`--production`). */
  boolean?: boolean;
}

const OPTIONS = {
  port: { flag: 'port', env: 'FERRY_PORT' },
  mgmtPort: { flag: 'mgmt-port', env: 'FERRY_MGMT_PORT' },
  meteringFlush: { flag: 'metering-flush', env: 'FERRY_METERING_FLUSH' },
  host: { flag: 'host', env: 'FERRY_HOST' },
  dataDir: { flag: 'data-dir', env: 'FERRY_DATA_DIR' },
  databaseUrl: { flag: 'database-url', env: 'FERRY_DATABASE_URL' },
  databaseSchema: { flag: 'database-schema', env: 'FERRY_DATABASE_SCHEMA' },
  headerPrefix: { flag: 'header-prefix', env: 'FERRY_HEADER_PREFIX' },
  production: { flag: 'production', env: 'FERRY_ENV', boolean: true },
  plan: { flag: 'plan', env: 'FERRY_PLAN' },
  plansFile: { flag: 'plans-file', env: 'FERRY_PLANS_FILE' },
  roles: { flag: 'roles', env: 'FERRY_ROLES' },
  concurrency: { flag: 'concurrency', env: 'FERRY_CONCURRENCY' },
  originConcurrency: { flag: 'origin-concurrency', env: 'FERRY_ORIGIN_CONCURRENCY' },
  originStall: { flag: 'origin-stall', env: 'FERRY_ORIGIN_STALL' },
  deliveryThread: { flag: 'delivery-thread', env: 'FERRY_DELIVERY_THREAD' },
  workflowInlineHistory: { flag: 'workflow-inline-history', env: 'FERRY_WORKFLOW_INLINE_HISTORY' },
  lease: { flag: 'lease', env: 'FERRY_LEASE' },
  sqliteSynchronous: { flag: 'sqlite-synchronous', env: 'FERRY_SQLITE_SYNCHRONOUS' },
  eventRetention: { flag: 'event-retention', env: 'FERRY_EVENT_RETENTION' },
  shutdownGrace: { flag: 'shutdown-grace', env: 'FERRY_SHUTDOWN_GRACE' },
  logLevel: { flag: 'log-level', env: 'FERRY_LOG_LEVEL' },
} satisfies Record<string, Option>;

type OptionName = keyof typeof OPTIONS;

/** Thrown for a bad flag or value; the CLI prints the message and exits with status 2. */
export class ConfigError extends Error {}

/** Parses `--name value`, `--name=value` and boolean `--name`; rejects unknown flags. */
export function parseFlags(argv: readonly string[]): Map<string, string> {
  const known = new Map<string, Option>(Object.values(OPTIONS).map((o) => [o.flag, o]));
  const flags = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? '';
    if (!arg.startsWith('--')) throw new ConfigError(`unexpected argument "${arg}"`);
    const eq = arg.indexOf('=');
    const name = eq === -1 ? arg.slice(2) : arg.slice(2, eq);
    const option = known.get(name);
    if (!option) throw new ConfigError(`unknown option --${name} (see docs/configuration.md)`);
    if (eq !== -1) flags.set(name, arg.slice(eq + 1));
    else if (option.boolean) flags.set(name, 'true');
    else {
      const value = argv[++i];
      if (value === undefined) throw new ConfigError(`--${name} needs a value`);
      flags.set(name, value);
    }
  }
  return flags;
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

export function loadConfig(
  argv: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
  cwd: string = process.cwd(),
  cpus: number = availableParallelism(),
): Config {
  const flags = parseFlags(argv);
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

  const productionText = get('production');
  const production =
    productionText === 'true' || productionText === '1' || productionText === 'production';

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

  const concurrency = integer('concurrency', 256, 1, 100_000);
  return {
    port: integer('port', 8080, 0, 65_535),
    mgmtPort: get('mgmtPort') === undefined ? undefined : integer('mgmtPort', 0, 0, 65_535),
    meteringFlushMs: duration('meteringFlush', '5s', 1_000),
    host: get('host') ?? '127.0.0.1',
    dataDir: resolve(cwd, get('dataDir') ?? '.ferry'),
    databaseUrl,
    databaseSchema: databaseSchema(get('databaseSchema'), describe('databaseSchema')),
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
    deliveryThread: {
      auto: cpus > 1,
      on: true,
      off: false,
    }[oneOf('deliveryThread', ['auto', 'on', 'off'], 'auto')],
    workflowInlineHistoryBytes: integer('workflowInlineHistory', 1024 * 1024, 0, 100 * 1024 * 1024),
    // A lease shorter than a second would expire while deliveries are still in flight.
    leaseMs: duration('lease', '30s', 1_000),
    sqliteSynchronous: oneOf('sqliteSynchronous', ['full', 'normal'], 'full'),
    eventRetentionMs: duration('eventRetention', '7d'),
    shutdownGraceMs: duration('shutdownGrace', '10s'),
    logLevel: oneOf('logLevel', ['fatal', 'error', 'warn', 'info', 'debug', 'silent'], 'info'),
  };
}
