/** Accounts: insert, get, signing-key rotation. */
import { expect, it } from 'vitest';
import { newId, newSigningKey } from '../../core/ids.js';
import { makeAccount } from './fixtures.js';
import type { SuiteContext } from './suite.js';

export function accountCases(ctx: SuiteContext): void {
  it('accountInsert then accountGet returns every field', async () => {
    const ex = ctx.executor();
    const account = makeAccount({ plan: 'paid', createdAt: 1_767_225_600_123 });
    await ex.accountInsert({ account });
    expect(await ex.accountGet({ id: account.id })).toEqual(account);
  });

  it('accountGet of an unknown id is undefined', async () => {
    expect(await ctx.executor().accountGet({ id: newId('acct') })).toBeUndefined();
  });

  it('accountInsert of an existing id rejects', async () => {
    const ex = ctx.executor();
    const account = makeAccount();
    await ex.accountInsert({ account });
    await expect(ex.accountInsert({ account: { ...account, plan: 'paid' } })).rejects.toThrow();
    expect(await ex.accountGet({ id: account.id })).toEqual(account);
  });

  it('accountUpdateSigningKeys replaces both keys of that account only', async () => {
    const ex = ctx.executor();
    const account = makeAccount();
    const other = makeAccount();
    await ex.accountInsert({ account });
    await ex.accountInsert({ account: other });
    const keys = { currentSigningKey: account.nextSigningKey, nextSigningKey: newSigningKey() };
    await ex.accountUpdateSigningKeys({ id: account.id, ...keys });
    expect(await ex.accountGet({ id: account.id })).toEqual({ ...account, ...keys });
    expect(await ex.accountGet({ id: other.id })).toEqual(other);
  });
}
