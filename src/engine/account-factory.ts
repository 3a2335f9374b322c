/** Creating messaging accounts: used by first start (the default account) and the management API. */
import { randomUUID } from 'node:crypto';
import { newSigningKey } from '../core/ids.js';
import type { SecretBox } from '../core/secret-box.js';
import { encodeToken, hashPassword, newPassword } from '../core/token.js';
import type { Account, AccountRegion, PlanName } from '../core/types.js';
import type { Executor } from '../storage/driver.js';

/** What `SecretBox` authenticates with an account's sealed password: its row and field. */
export const accountPasswordContext = (accountId: string): string =>
  `account-password:${accountId}`;

/**
 * A fresh password for account `accountId`: the password and token to show, and what to store,
 * the hash that authentication compares and, given `secrets`, the sealed password its owner
 * reads again through the management API.
 */
export function newAccountPassword(
  accountId: string,
  secrets: SecretBox | undefined,
): {
  password: string;
  token: string;
  stored: Pick<Account, 'passwordHash' | 'passwordSealed'>;
} {
  const password = newPassword();
  const stored: Pick<Account, 'passwordHash' | 'passwordSealed'> = {
    passwordHash: hashPassword(password),
  };
  if (secrets) stored.passwordSealed = secrets.seal(password, accountPasswordContext(accountId));
  return { password, token: encodeToken(accountId, password), stored };
}

/**
 * Creates an account with a fresh password and signing keys, and returns the password and token
 * with it. The password is stored hashed and, given `secrets` (Ferry always gives its own;
 * tests that never read it back may not), sealed so its owner can read it again.
 */
export async function createAccount(p: {
  executor: Executor;
  plan: PlanName;
  now: number;
  /** The owning management user. */
  ownerId?: string;
  region?: AccountRegion;
  secrets?: SecretBox;
}): Promise<{ account: Account; password: string; token: string }> {
  const id = randomUUID();
  const { password, token, stored } = newAccountPassword(id, p.secrets);
  const account: Account = {
    id,
    plan: p.plan,
    ...stored,
    currentSigningKey: newSigningKey(),
    nextSigningKey: newSigningKey(),
    createdAt: p.now,
  };
  if (p.ownerId !== undefined) account.ownerId = p.ownerId;
  if (p.region !== undefined) account.region = p.region;
  await p.executor.accountInsert({ account });
  return { account, password, token };
}
