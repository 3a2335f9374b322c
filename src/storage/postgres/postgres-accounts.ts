/** Messaging accounts. */
import type { Account } from '../../core/types.js';
import type {
  AccountGetParams,
  AccountInsertParams,
  AccountUpdateSigningKeysParams,
} from '../driver.js';
import { type Db } from './postgres-rows.js';
import { type AccountRow, accountFromRow } from '../sql/rows.js';

export async function accountInsert(db: Db, { account: a }: AccountInsertParams): Promise<void> {
  await db`
    INSERT INTO accounts
      (id, plan, password_hash, current_signing_key, next_signing_key, created_at, owner_id,
       region, budget, plan_changed_at, password_sealed)
    VALUES
      (${a.id}, ${a.plan}, ${a.passwordHash}, ${a.currentSigningKey}, ${a.nextSigningKey},
       ${a.createdAt}, ${a.ownerId ?? null}, ${a.region ?? null}, ${a.budget ?? null},
       ${a.planChangedAt ?? null}, ${a.passwordSealed ?? null})`;
}

export async function accountGet(db: Db, p: AccountGetParams): Promise<Account | undefined> {
  const [row] = await db<AccountRow[]>`SELECT * FROM accounts WHERE id = ${p.id}`;
  return row && accountFromRow(row);
}

export async function accountUpdateSigningKeys(
  db: Db,
  p: AccountUpdateSigningKeysParams,
): Promise<void> {
  await db`
    UPDATE accounts
    SET current_signing_key = ${p.currentSigningKey}, next_signing_key = ${p.nextSigningKey}
    WHERE id = ${p.id}`;
}
