/** URL groups: put (insert and replace), get, list, count, delete, the per-account lock. */
import { expect, it } from 'vitest';
import { newId } from '../../core/ids.js';
import type { UrlGroup } from '../../core/types.js';
import { T0 } from './fixtures.js';
import type { SuiteContext } from './suite.js';

function makeGroup(accountId: string, overrides: Partial<UrlGroup> = {}): UrlGroup {
  return {
    accountId,
    name: 'orders',
    createdAt: T0,
    updatedAt: T0,
    endpoints: [
      { url: 'https://a.example.com/hook', name: 'a' },
      { url: 'https://b.example.com/' },
    ],
    ...overrides,
  };
}

export function urlGroupCases(ctx: SuiteContext): void {
  it('urlGroupPut then urlGroupGet returns every field, endpoints in order', async () => {
    const ex = ctx.executor();
    const group = makeGroup(newId('acct'), {
      headers: { 'Svc-Retries': ['2'], 'X-Multi': ['1', 'two, "3"'] },
    });
    await ex.urlGroupPut({ group });
    expect(await ex.urlGroupGet({ accountId: group.accountId, name: 'orders' })).toEqual(group);
  });

  it('urlGroupPut replaces the whole stored group, headers included', async () => {
    const ex = ctx.executor();
    const group = makeGroup(newId('acct'), { headers: { 'X-A': ['1'] } });
    await ex.urlGroupPut({ group });
    const replaced = { ...group, updatedAt: T0 + 5, endpoints: [{ url: 'https://c.example.com' }] };
    delete replaced.headers;
    await ex.urlGroupPut({ group: replaced });
    expect(await ex.urlGroupGet({ accountId: group.accountId, name: 'orders' })).toEqual(replaced);
  });

  it('groups are scoped by account: same name, different accounts, never mixed', async () => {
    const ex = ctx.executor();
    const a = makeGroup(newId('acct'));
    const b = makeGroup(newId('acct'), { endpoints: [{ url: 'https://b-only.example.com' }] });
    await ex.urlGroupPut({ group: a });
    await ex.urlGroupPut({ group: b });
    expect(await ex.urlGroupGet({ accountId: a.accountId, name: 'orders' })).toEqual(a);
    expect(await ex.urlGroupList({ accountId: b.accountId })).toEqual([b]);
    expect(await ex.urlGroupCount({ accountId: a.accountId })).toBe(1);
    expect(await ex.urlGroupGet({ accountId: newId('acct'), name: 'orders' })).toBeUndefined();
  });

  it('urlGroupList sorts by name in byte order; urlGroupCount counts', async () => {
    const ex = ctx.executor();
    const accountId = newId('acct');
    for (const name of ['b', 'B', 'a.1', 'a-1', '_z']) {
      await ex.urlGroupPut({ group: makeGroup(accountId, { name }) });
    }
    const names = (await ex.urlGroupList({ accountId })).map((g) => g.name);
    expect(names).toEqual(['B', '_z', 'a-1', 'a.1', 'b']);
    expect(await ex.urlGroupCount({ accountId })).toBe(5);
  });

  it('urlGroupDelete removes the group and says whether there was one', async () => {
    const ex = ctx.executor();
    const group = makeGroup(newId('acct'));
    await ex.urlGroupPut({ group });
    expect(await ex.urlGroupDelete({ accountId: group.accountId, name: 'orders' })).toBe(true);
    expect(await ex.urlGroupDelete({ accountId: group.accountId, name: 'orders' })).toBe(false);
    expect(await ex.urlGroupGet({ accountId: group.accountId, name: 'orders' })).toBeUndefined();
    expect(await ex.urlGroupCount({ accountId: group.accountId })).toBe(0);
  });

  it('urlGroupLock serializes read-modify-write of one account: no endpoint is lost', async () => {
    const accountId = newId('acct');
    const base = makeGroup(accountId, { endpoints: [] });
    // Ten concurrent transactions each read the group and append their own endpoint.
    await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        ctx.executor().transaction(async (tx) => {
          await tx.urlGroupLock({ accountId });
          const current = (await tx.urlGroupGet({ accountId, name: 'orders' })) ?? base;
          const endpoints = [...current.endpoints, { url: `https://e${i}.example.com` }];
          await tx.urlGroupPut({ group: { ...current, endpoints } });
        }),
      ),
    );
    const group = await ctx.executor().urlGroupGet({ accountId, name: 'orders' });
    expect(group?.endpoints.map((e) => e.url).sort()).toEqual(
      Array.from({ length: 10 }, (_, i) => `https://e${i}.example.com`).sort(),
    );
  });
}
