/**
 * The default account and the administrator of a node: created at first start and written to
 * `<data dir>/credentials.json` (mode 0600); later starts reuse them and refresh the URLs and
 * signing keys in the file (a key rotation changes them). A file from a version without the
 * management API gains `mgmtUrl`, `email` and `apiKey` on the next start.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createUser } from '../api/mgmt/users.js';
import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/logger.js';
import type { ManagementUser } from '../core/management.js';
import type { SecretBox } from '../core/secret-box.js';
import { decodeToken, passwordMatches } from '../core/token.js';
import type { Account, PlanName } from '../core/types.js';
import { accountPasswordContext, createAccount } from '../engine/account-factory.js';
import type { AccountDirectory } from '../engine/accounts.js';
import type { AccountUpdateParams, Executor } from '../storage/driver.js';
import { credentialsPath, type Credentials } from './credentials-file.js';

export { createAccount } from '../engine/account-factory.js';

export { credentialsPath, type Credentials } from './credentials-file.js';

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

const ADMIN_EMAIL = 'admin@ferry.local';

/**
 * The administrator of `credentials.json` when its e-mail and key still match the database;
 * otherwise a new administrator (`admin@ferry.local`, or a suffixed address when that one is
 * taken by an administrator whose key this file does not hold).
 */
async function ensureAdmin(p: {
  existing: Partial<Credentials> | undefined;
  executor: Executor;
  now: number;
}): Promise<{ user: ManagementUser; apiKey: string; created: boolean }> {
  const { email, apiKey } = p.existing ?? {};
  if (email && apiKey) {
    const user = await p.executor.userGetByEmail({ email: email.toLowerCase() });
    if (user?.admin && passwordMatches(apiKey, user.apiKeyHash)) {
      return { user, apiKey, created: false };
    }
  }
  const taken = await p.executor.userGetByEmail({ email: ADMIN_EMAIL });
  const adminEmail = taken ? `admin-${randomBytes(4).toString('hex')}@ferry.local` : ADMIN_EMAIL;
  const admin = await createUser({
    executor: p.executor,
    email: adminEmail,
    admin: true,
    now: p.now,
  });
  return { ...admin, created: true };
}

/**
 * Brings a reused default account up to date: an account from before the management API is
 * taken over by the administrator, and one from before the secret key (migration 010) gets its
 * password sealed, which the token in credentials.json holds (no other hashed-only account's
 * password can be recovered).
 */
async function upgradeDefaultAccount(p: {
  account: Account;
  token: string;
  ownerId: string;
  executor: Executor;
  accounts: AccountDirectory;
  secrets: SecretBox;
}): Promise<Account> {
  const changed: Pick<AccountUpdateParams, 'ownerId' | 'passwordSealed'> = {};
  if (p.account.ownerId === undefined) changed.ownerId = p.ownerId;
  const password = decodeToken(p.token)?.password;
  if (p.account.passwordSealed === undefined && password !== undefined) {
    changed.passwordSealed = p.secrets.seal(password, accountPasswordContext(p.account.id));
  }
  if (Object.keys(changed).length === 0) return p.account;
  await p.executor.accountUpdate({ id: p.account.id, ...changed });
  p.accounts.forget(p.account.id);
  return { ...p.account, ...changed };
}

export async function ensureDefaultAccount(p: {
  dataDir: string;
  /** This node's API URL; empty when it serves no API (the file then keeps the one it has). */
  baseUrl: string;
  /** This node's management API URL; empty when it serves none. */
  mgmtUrl: string;
  plan: PlanName;
  executor: Executor;
  accounts: AccountDirectory;
  clock: Clock;
  logger: Logger;
  secrets: SecretBox;
}): Promise<{
  credentials: Credentials;
  account: Account;
  /** The default account was created by this start (its token and signing keys are new). */
  created: boolean;
  /** The administrator was created by this start (its API key is new). */
  adminCreated: boolean;
}> {
  const path = credentialsPath(p.dataDir);
  const existing = readCredentials(path, p.logger);
  const admin = await ensureAdmin({ existing, executor: p.executor, now: p.clock.now() });
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
      ownerId: admin.user.id,
      secrets: p.secrets,
    }));
  } else {
    account = await upgradeDefaultAccount({ ...p, account, token, ownerId: admin.user.id });
  }
  const credentials: Credentials = {
    baseUrl: p.baseUrl || existing?.baseUrl || '',
    token,
    currentSigningKey: account.currentSigningKey,
    nextSigningKey: account.nextSigningKey,
    accountId: account.id,
    mgmtUrl: p.mgmtUrl || existing?.mgmtUrl || '',
    email: admin.user.email,
    apiKey: admin.apiKey,
  };
  writeCredentials(path, credentials);
  return { credentials, account, created, adminCreated: admin.created };
}
