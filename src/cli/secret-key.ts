/**
 * Ferry's secret key, which seals the stored secrets the management API shows again
 * (core/secret-box.ts). `--secret-key`/`FERRY_SECRET_KEY` gives it; otherwise, with SQLite,
 * Ferry keeps it in `<data dir>/secret.key` (mode 0600), created at first start. PostgreSQL
 * requires the option: several nodes share the database, and each must open what another sealed,
 * so a key made by one node's data dir would not do.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseSecretKey, SECRET_KEY_BYTES } from '../core/secret-box.js';
import { ConfigError, type Config } from './config.js';

export const secretKeyPath = (dataDir: string): string => join(dataDir, 'secret.key');

/** The key `config` names, or the data dir's key file (created when missing). */
export function loadSecretKey(
  config: Pick<Config, 'secretKey' | 'databaseUrl' | 'dataDir'>,
): Buffer {
  if (config.secretKey) return config.secretKey;
  if (config.databaseUrl) {
    throw new ConfigError(
      '--secret-key/FERRY_SECRET_KEY is required with PostgreSQL: every node must seal and open ' +
        'stored secrets with the same key (create one with: openssl rand -base64 32)',
    );
  }
  const path = secretKeyPath(config.dataDir);
  const fresh = randomBytes(SECRET_KEY_BYTES);
  try {
    // `wx`: create only. Two processes racing on one data dir cannot both write a key (the
    // loser reads the winner's below; SQLite's lock then stops it anyway).
    writeFileSync(path, `${fresh.toString('base64')}\n`, { mode: 0o600, flag: 'wx' });
    return fresh;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  const key = parseSecretKey(readFileSync(path, 'utf8'));
  if (!key) {
    throw new ConfigError(
      `${path} is not a secret key (32 bytes as base64 or 64 hex digits): restore it from a ` +
        'backup, or give the key with --secret-key/FERRY_SECRET_KEY',
    );
  }
  return key;
}
