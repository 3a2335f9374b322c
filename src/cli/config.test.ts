import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULT_PLANS } from '../core/plans.js';
import { checkRolesForStorage, ConfigError, loadConfig } from './config.js';

const dir = mkdtempSync(join(tmpdir(), 'ferry-config-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('loadConfig', () => {
  it('has the documented defaults', () => {
    const config = loadConfig([], {}, dir);
    expect(config).toMatchObject({
      port: 8080,
      host: '127.0.0.1',
      dataDir: join(dir, '.ferry'),
      headerPrefix: 'Svc',
      production: false,
      plan: 'paid',
      roles: ['api', 'worker', 'scheduler', 'maintenance'],
      concurrency: 256,
      leaseMs: 30_000,
      sqliteSynchronous: 'full',
      eventRetentionMs: 7 * 86_400_000,
      shutdownGraceMs: 10_000,
    });
    expect(config.databaseUrl).toBeUndefined();
    expect(config.plans).toEqual(DEFAULT_PLANS);
  });

  it('reads the storage bounds (--database-timeout, --sqlite-max-size), and refuses bad values', () => {
    const defaults = loadConfig([], {}, dir);
    expect(defaults.databaseTimeoutMs).toBe(5_000);
    expect(defaults.sqliteMaxSize).toBeUndefined();
    const config = loadConfig(
      ['--database-timeout', '2s'],
      { FERRY_SQLITE_MAX_SIZE: '1048576' },
      dir,
    );
    expect(config).toMatchObject({ databaseTimeoutMs: 2_000, sqliteMaxSize: 1_048_576 });
    expect(() => loadConfig(['--database-timeout', '0s'], {}, dir)).toThrow(
      /--database-timeout\/FERRY_DATABASE_TIMEOUT must be at least 1s/,
    );
    expect(() => loadConfig(['--sqlite-max-size', '1000'], {}, dir)).toThrow(
      /--sqlite-max-size\/FERRY_SQLITE_MAX_SIZE must be an integer from 65536/,
    );
  });

  it('reads the metrics and log options, and refuses bad values', () => {
    const defaults = loadConfig([], {}, dir);
    expect(defaults).toMatchObject({ logFormat: 'json', metricsAccountLabel: false });
    expect(defaults.metricsPort).toBeUndefined();
    expect(defaults.metricsToken).toBeUndefined();
    const config = loadConfig(
      ['--metrics-port', '9100', '--metrics-account-label', '--log-format', 'pretty'],
      { FERRY_METRICS_TOKEN: 's3cret' },
      dir,
    );
    expect(config).toMatchObject({
      metricsPort: 9100,
      metricsToken: 's3cret',
      metricsAccountLabel: true,
      logFormat: 'pretty',
    });
    expect(() => loadConfig(['--log-format', 'xml'], {}, dir)).toThrow(
      /--log-format\/FERRY_LOG_FORMAT must be one of json, pretty, got "xml"/,
    );
    expect(() => loadConfig(['--metrics-port', 'x'], {}, dir)).toThrow(/--metrics-port/);
  });

  it('runs deliveries on a thread of their own when there is a second CPU, unless told', () => {
    expect(loadConfig([], {}, dir, 2).deliveryThread).toBe(true);
    expect(loadConfig([], {}, dir, 1).deliveryThread).toBe(false);
    expect(loadConfig(['--delivery-thread', 'on'], {}, dir, 1).deliveryThread).toBe(true);
    expect(loadConfig([], { FERRY_DELIVERY_THREAD: 'off' }, dir, 2).deliveryThread).toBe(false);
    expect(() => loadConfig(['--delivery-thread', 'yes'], {}, dir)).toThrow(
      /--delivery-thread\/FERRY_DELIVERY_THREAD must be one of auto, on, off, got "yes"/,
    );
  });

  it('reads a switch only from the words it documents', () => {
    for (const [value, on] of [
      ['production', true],
      ['true', true],
      ['1', true],
      ['development', false],
      ['false', false],
      ['0', false],
    ] as const) {
      expect(loadConfig([], { FERRY_ENV: value }, dir).production).toBe(on);
    }
    expect(loadConfig(['--production'], {}, dir).production).toBe(true);
    expect(loadConfig([], { FERRY_METRICS_ACCOUNT_LABEL: '0' }, dir).metricsAccountLabel).toBe(
      false,
    );
  });

  it('listens on an IP address or a host name, and splits roles only on PostgreSQL', () => {
    for (const host of ['0.0.0.0', '::', '::1', 'localhost', 'ferry-1.internal']) {
      expect(loadConfig(['--host', host], {}, dir).host).toBe(host);
    }
    const url = 'postgres://db/ferry';
    const config = loadConfig(['--roles', 'worker', '--database-url', url], {}, dir);
    expect(config.roles).toEqual(['worker']);
    expect(() => checkRolesForStorage(config)).not.toThrow();
    const sqlite = loadConfig(['--roles', 'worker'], {}, dir);
    expect(() => checkRolesForStorage(sqlite)).toThrow(
      /api, scheduler, maintenance would run nowhere/,
    );
  });

  it('takes flags over environment variables', () => {
    const env = { FERRY_PORT: '9000', FERRY_HEADER_PREFIX: 'Upstash', FERRY_ENV: 'production' };
    const config = loadConfig(['--port=9100', '--lease', '1m'], env, dir);
    expect(config.port).toBe(9100);
    expect(config.headerPrefix).toBe('Upstash');
    expect(config.production).toBe(true);
    expect(config.leaseMs).toBe(60_000);
  });

  it('reads the secret key as hex or base64, and never repeats a bad one', () => {
    const key = Buffer.alloc(32, 7);
    expect(loadConfig(['--secret-key', key.toString('hex')], {}, dir).secretKey).toEqual(key);
    const env = { FERRY_SECRET_KEY: key.toString('base64') };
    expect(loadConfig([], env, dir).secretKey).toEqual(key);
    expect(loadConfig([], {}, dir).secretKey).toBeUndefined();
    expect(() => loadConfig(['--secret-key', 'my-secret-value'], {}, dir)).toThrow(
      expect.objectContaining({ message: expect.not.stringContaining('my-secret-value') }),
    );
  });

  it('overrides plan limits from a plans file', () => {
    const file = join(dir, 'plans.json');
    writeFileSync(file, JSON.stringify({ free: { max_retries: 5, default_retries: 4 } }));
    const config = loadConfig(['--plans-file', file], {}, dir);
    expect(config.plans.free.max_retries).toBe(5);
    expect(config.plans.free.default_retries).toBe(4);
    expect(config.plans.paid).toEqual(DEFAULT_PLANS.paid);
  });

  it('names the bad option and value', () => {
    const bad = join(dir, 'bad-plans.json');
    writeFileSync(bad, JSON.stringify({ free: { max_retires: 5 } }));
    const cases: [string[], Record<string, string>, RegExp][] = [
      [['--plans-file', bad], {}, /max_retires/],
      [['--port', '70000'], {}, /--port\/FERRY_PORT/],
      [[], { FERRY_PLAN: 'gold' }, /--plan\/FERRY_PLAN/],
      [['--database-url', 'mysql://x'], {}, /postgres:\/\//],
      [['--roles', 'api,cooking'], {}, /cooking/],
      [['--lease', 'forever'], {}, /--lease/],
      [['--header-prefix', 'Sv-c'], {}, /letters and digits/],
      [['--nope'], {}, /unknown option --nope/],
      [['--host'], {}, /--host needs a value/],
      [['--secret-key', 'hunter2'], {}, /--secret-key\/FERRY_SECRET_KEY must be 32 bytes/],
      [[], { FERRY_SECRET_KEY: 'ab'.repeat(31) }, /--secret-key\/FERRY_SECRET_KEY/],
      [[], { FERRY_ENV: 'prod' }, /--production\/FERRY_ENV must be one of production, .*"prod"/],
      [[], { FERRY_ENV: 'yes' }, /--production\/FERRY_ENV/],
      [[], { FERRY_METRICS_ACCOUNT_LABEL: 'yes' }, /--metrics-account-label/],
      [['--host', '999.1.1.1'], {}, /--host\/FERRY_HOST must be an IP address or a host name/],
      [['--host', 'my host'], {}, /--host\/FERRY_HOST/],
    ];
    for (const [argv, env, pattern] of cases) {
      expect(() => loadConfig(argv, env, dir)).toThrow(ConfigError);
      expect(() => loadConfig(argv, env, dir)).toThrow(pattern);
    }
  });
});
