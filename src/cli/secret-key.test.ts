import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConfigError } from './config.js';
import { loadSecretKey, secretKeyPath } from './secret-key.js';

let dataDir: string;
beforeEach(() => {
  dataDir = mkdtempSync(join(tmpdir(), 'ferry-key-'));
});
afterEach(() => rmSync(dataDir, { recursive: true, force: true }));

describe('loadSecretKey', () => {
  it('creates secret.key (0600) at first start and reads the same key afterwards', () => {
    const key = loadSecretKey({ dataDir });
    expect(key).toHaveLength(32);
    const path = secretKeyPath(dataDir);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(Buffer.from(readFileSync(path, 'utf8').trim(), 'base64')).toEqual(key);
    expect(loadSecretKey({ dataDir })).toEqual(key);
  });

  it('takes the configured key over the file, and creates no file then', () => {
    const key = Buffer.alloc(32, 1);
    expect(loadSecretKey({ dataDir, secretKey: key })).toBe(key);
    expect(() => statSync(secretKeyPath(dataDir))).toThrow(/ENOENT/);
  });

  it('requires --secret-key with PostgreSQL, naming the option', () => {
    const config = { dataDir, databaseUrl: 'postgres://db/ferry' };
    expect(() => loadSecretKey(config)).toThrow(ConfigError);
    expect(() => loadSecretKey(config)).toThrow(/--secret-key\/FERRY_SECRET_KEY is required/);
    const key = Buffer.alloc(32, 2);
    expect(loadSecretKey({ ...config, secretKey: key })).toBe(key);
  });

  it('refuses a damaged key file instead of making a new key', () => {
    writeFileSync(secretKeyPath(dataDir), 'not a key\n');
    expect(() => loadSecretKey({ dataDir })).toThrow(/secret\.key is not a secret key/);
    expect(readFileSync(secretKeyPath(dataDir), 'utf8')).toBe('not a key\n');
  });
});
