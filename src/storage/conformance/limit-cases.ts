/** Account limits: DLQ eviction beyond max_dlq_size, and the per-second request counter. */
import { expect, it } from 'vitest';
import { newId } from '../../core/ids.js';
import type { DlqEntry } from '../../core/types.js';
import type { Executor } from '../driver.js';
import { makeDlqEntry, makeMessage, T0 } from './fixtures.js';
import type { SuiteContext } from './suite.js';

/** `n` entries (of a fresh account by default) created at T0+from+1…T0+from+n, oldest first. */
async function fill(ex: Executor, n: number, accountId = newId('acct'), from = 0) {
  const entries: DlqEntry[] = [];
  for (let i = 1; i <= n; i++) {
    entries.push(makeDlqEntry(makeMessage(accountId), { createdAt: T0 + from + i }));
  }
  await ex.dlqInsertMany({ entries });
  return { accountId, entries, ids: entries.map((e) => e.dlqId) };
}

const listIds = async (ex: Executor, accountId: string): Promise<string[]> =>
  (await ex.dlqList({ accountId, filter: {}, count: 100 })).items.map((e) => e.dlqId).reverse();

export function limitCases(ctx: SuiteContext): void {
  it('dlqEvictOldest deletes and returns the account’s oldest entries beyond maxSize', async () => {
    const ex = ctx.executor();
    const a = await fill(ex, 5);
    const b = await fill(ex, 2);
    const evicted = await ex.dlqEvictOldest({ accountId: a.accountId, maxSize: 3 });
    expect(evicted.map((e) => e.dlqId)).toEqual(a.ids.slice(0, 2));
    expect(evicted[0]?.message.id).toBe(a.entries[0]?.message.id);
    expect(await listIds(ex, a.accountId)).toEqual(a.ids.slice(2));
    expect(await ex.dlqEvictOldest({ accountId: a.accountId, maxSize: 3 })).toEqual([]);
    // Another account's entries are neither counted nor evicted.
    expect(await listIds(ex, b.accountId)).toEqual(b.ids);
    expect(await ex.dlqEvictOldest({ accountId: newId('acct'), maxSize: 0 })).toEqual([]);
  });

  it('the size it checks follows every delete and insert', async () => {
    const ex = ctx.executor();
    const a = await fill(ex, 3);
    const [first, second, third] = a.ids;
    const dlqIds = [first ?? '', third ?? ''];
    expect(await ex.dlqDeleteMany({ accountId: a.accountId, dlqIds })).toBe(2);
    const more = await fill(ex, 2, a.accountId, 100); // size 1 + 2 = 3
    expect(await ex.dlqEvictOldest({ accountId: a.accountId, maxSize: 3 })).toEqual([]);
    const evicted = await ex.dlqEvictOldest({ accountId: a.accountId, maxSize: 2 });
    expect(evicted.map((e) => e.dlqId)).toEqual([second]);
    expect(await listIds(ex, a.accountId)).toEqual(more.ids);
  });

  it('inserts and evicts in one transaction; a rollback undoes both', async () => {
    const ex = ctx.executor();
    const a = await fill(ex, 2);
    const fresh = makeDlqEntry(makeMessage(a.accountId), { createdAt: T0 + 10 });
    await expect(
      ex.transaction(async (tx) => {
        await tx.dlqInsertMany({ entries: [fresh] });
        expect(await tx.dlqEvictOldest({ accountId: a.accountId, maxSize: 2 })).toHaveLength(1);
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    expect(await listIds(ex, a.accountId)).toEqual(a.ids);
    await ex.transaction(async (tx) => {
      await tx.dlqInsertMany({ entries: [fresh] });
      await tx.dlqEvictOldest({ accountId: a.accountId, maxSize: 2 });
    });
    expect(await listIds(ex, a.accountId)).toEqual([a.ids[1], fresh.dlqId]);
  });

  it('rateCounterIncrement counts per subject and window; a later window starts over', async () => {
    const ex = ctx.executor();
    const subjectId = newId('acct');
    const other = newId('acct');
    const inc = (windowStart: number, by = 1, subject = subjectId) =>
      ex.rateCounterIncrement({ subjectId: subject, windowStart, by });
    expect(await inc(T0)).toEqual({ windowStart: T0, count: 1 });
    expect(await inc(T0, 2)).toEqual({ windowStart: T0, count: 3 });
    expect(await inc(T0, 1, other)).toEqual({ windowStart: T0, count: 1 });
    expect(await inc(T0 + 1_000)).toEqual({ windowStart: T0 + 1_000, count: 1 });
    // A node whose clock is behind counts in the current window; it never restarts backwards.
    expect(await inc(T0)).toEqual({ windowStart: T0 + 1_000, count: 2 });
    const counts = await Promise.all(Array.from({ length: 20 }, () => inc(T0 + 5_000)));
    expect(counts.map((c) => c.count).sort((x, y) => x - y)).toEqual(
      Array.from({ length: 20 }, (_, i) => i + 1),
    );
  });
}
