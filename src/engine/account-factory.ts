/** Creating messaging accounts: used by first start (the default account) and the management API. */
import { randomUUID } from 'node:crypto';
import { newSigningKey } from '../core/ids.js';
import { encodeToken, hashPassword, newPassword } from '../core/token.js';
import type { Account, AccountRegion, PlanName } from '../core/types.js';
import type { Executor } from '../storage/driver.js';

/**
 * Creates an account with a fresh password and signing keys. Returns the password and token with
 * it: only a hash of the password is stored, so this is the one time they can be shown.
 */
export async function createAccount(p: {
  executor: Executor;
  plan: PlanName;
  now: number;
  /** The owning management user. */
  ownerId?: string;
  region?: AccountRegion;
}): Promise<{ account: Account; password: string; token: string }> {
  const password = newPassword();
  const account: Account = {
    id: randomUUID(),
    plan: p.plan,
    passwordHash: hashPassword(password),
    currentSigningKey: newSigningKey(),
    nextSigningKey: newSigningKey(),
    createdAt: p.now,
  };
  if (p.ownerId !== undefined) account.ownerId = p.ownerId;
  if (p.region !== undefined) account.region = p.region;
  await p.executor.accountInsert({ account });
  return { account, password, token: encodeToken(account.id, password) };
}
