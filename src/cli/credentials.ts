/**
 * The default account of a node: created at first start and written to
 * `<data dir>/credentials.json` (mode 0600); later starts reuse it and refresh the base URL and
 * signing keys in the file (a key rotation changes them).
 */
import { randomUUID } from 'node:crypto';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Clock } from '../core/clock.js';
import { newSigningKey } from '../core/ids.js';
import type { Logger } from '../core/logger.js';
import { encodeToken, hashPassword, newPassword } from '../core/token.js';
import type { Account, PlanName } from '../core/types.js';
import type { AccountDirectory } from '../engine/accounts.js';
import type { Executor } from '../storage/driver.js';

export interface Credentials {
  baseUrl: string;
  token: string;
  currentSigningKey: string;
  nextSigningKey: string;
  accountId: string;
}

export const credentialsPath = (dataDir: string): string => join(dataDir, 'credentials.json');

function readCredentials(path: string, logger: Logger): Partial<Credentials> | undefined {
  if (!existsSync(path)) return undefined;
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as Partial<Credentials>;
  } catch (error) {
    logger.warn(
      { path, err: error },
      'credentials.json is not valid JSON; creating a new default account',
    );
    return undefined;
  }
}

function writeCredentials(path: string, credentials: Credentials): void {
  writeFileSync(path, `${JSON.stringify(credentials, null, 2)}\n`, { mode: 0o600 });
  chmodSync(path, 0o600); // writeFileSync keeps the mode of an existing file
}

/** Creates an account with a fresh password and signing keys; returns it with its token. */
export async function createAccount(p: {
  executor: Executor;
  plan: PlanName;
  now: number;
}): Promise<{ account: Account; token: string }> {
  const password = newPassword();
  const account: Account = {
    id: randomUUID(),
    plan: p.plan,
    passwordHash: hashPassword(password),
    currentSigningKey: newSigningKey(),
    nextSigningKey: newSigningKey(),
    createdAt: p.now,
  };
  await p.executor.accountInsert({ account });
  return { account, token: encodeToken(account.id, password) };
}

export async function ensureDefaultAccount(p: {
  dataDir: string;
  /** This node's API URL; empty when it serves no API (the file then keeps the one it has). */
  baseUrl: string;
  plan: PlanName;
  executor: Executor;
  accounts: AccountDirectory;
  clock: Clock;
  logger: Logger;
}): Promise<{ credentials: Credentials; account: Account; created: boolean }> {
  const path = credentialsPath(p.dataDir);
  const existing = readCredentials(path, p.logger);
  let account = existing?.token ? await p.accounts.authenticate(existing.token) : undefined;
  let token = existing?.token;
  const created = !account;
  if (!account || !token) {
    if (existing) {
      p.logger.warn(
        { path },
        'credentials.json does not match this database; creating a new default account',
      );
    }
    ({ account, token } = await createAccount({
      executor: p.executor,
      plan: p.plan,
      now: p.clock.now(),
    }));
  }
  const credentials: Credentials = {
    baseUrl: p.baseUrl || existing?.baseUrl || '',
    token,
    currentSigningKey: account.currentSigningKey,
    nextSigningKey: account.nextSigningKey,
    accountId: account.id,
  };
  writeCredentials(path, credentials);
  return { credentials, account, created };
}
