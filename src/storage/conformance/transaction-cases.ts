/** Transactions: commit, rollback of every kind of write, nesting, isolation from the root. */
import { expect, it } from 'vitest';
import { newId } from '../../core/ids.js';
import type { Executor } from '../driver.js';
import {
  clearMessages,
  leaseOf,
  makeAccount,
  makeDlqEntry,
  makeEvent,
  makeMessage,
  plain,
  T0,
} from './fixtures.js';
import type { SuiteContext } from './suite.js';

class Boom extends Error {}

/** Writes one row of every table for a fresh account; returns how to check them. */
async function writeEverything(tx: Executor): Promise<(ex: Executor) => Promise<boolean[]>> {
  const account = makeAccount();
  const message = makeMessage(account.id);
  const dlq = makeDlqEntry(makeMessage(account.id));
  const dedupKey = newId('key');
  await tx.accountInsert({ account });
  await tx.messageInsertMany({ messages: [message] });
  await tx.eventInsertMany({ events: [makeEvent(message)] });
  await tx.dlqInsertMany({ entries: [dlq] });
  await tx.dedupClaim({
    accountId: account.id,
    key: dedupKey,
    messageId: message.id,
    now: T0,
    expiresAt: T0 + 60_000,
  });
  return async (ex) => [
    (await ex.accountGet({ id: account.id })) !== undefined,
    (await ex.messageGet({ accountId: account.id, id: message.id })) !== undefined,
    (await ex.eventList({ accountId: account.id, filter: {}, count: 10 })).items.length > 0,
    (await ex.dlqGet({ accountId: account.id, dlqId: dlq.dlqId })) !== undefined,
    (
      await ex.dedupClaim({
        accountId: account.id,
        key: dedupKey,
        messageId: newId('msg'),
        now: T0,
        expiresAt: T0 + 60_000,
      })
    ).duplicate,
  ];
}

export function transactionCases(ctx: SuiteContext): void {
  it('commits every write and returns the callback value', async () => {
    const ex = ctx.executor();
    let check: ((ex: Executor) => Promise<boolean[]>) | undefined;
    const result = await ex.transaction(async (tx) => {
      check = await writeEverything(tx);
      return 42;
    });
    expect(result).toBe(42);
    expect(await check?.(ex)).toEqual([true, true, true, true, true]);
  });

  it('a throw inside rolls back every write and rejects with that error', async () => {
    const ex = ctx.executor();
    let check: ((ex: Executor) => Promise<boolean[]>) | undefined;
    const boom = new Boom('boom');
    await expect(
      ex.transaction(async (tx) => {
        check = await writeEverything(tx);
        throw boom;
      }),
    ).rejects.toBe(boom);
    expect(await check?.(ex)).toEqual([false, false, false, false, false]);
  });

  it('rolls back updates and deletes too', async () => {
    const ex = ctx.executor();
    const account = makeAccount();
    await ex.accountInsert({ account });
    const messages = [makeMessage(account.id), makeMessage(account.id)];
    await ex.messageInsertMany({ messages });
    await expect(
      ex.transaction(async (tx) => {
        await tx.accountUpdateSigningKeys({
          id: account.id,
          currentSigningKey: 'sig_x',
          nextSigningKey: 'sig_y',
        });
        expect(await tx.messageDeleteMany({ accountId: account.id, filter: {} })).toHaveLength(2);
        throw new Boom('boom');
      }),
    ).rejects.toThrow('boom');
    expect(await ex.accountGet({ id: account.id })).toEqual(account);
    for (const m of messages) {
      expect(plain(await ex.messageGet({ accountId: account.id, id: m.id }))).toEqual(plain(m));
    }
  });

  it('a claim in a rolled-back transaction leaves the messages unclaimed', async () => {
    const ex = ctx.executor();
    await clearMessages(ex);
    const message = makeMessage(newId('acct'), { dueAt: T0 });
    await ex.messageInsertMany({ messages: [message] });
    await expect(
      ex.transaction(async (tx) => {
        const claimed = await tx.messageClaimDue({ now: T0, limit: 10, leaseUntil: T0 + 30_000 });
        expect(claimed.map((m) => m.id)).toEqual([message.id]);
        throw new Boom('boom');
      }),
    ).rejects.toThrow('boom');
    const [again] = await ex.messageClaimDue({ now: T0, limit: 10, leaseUntil: T0 + 30_000 });
    expect(again?.id).toBe(message.id);
    if (again) await ex.messageDeleteLeasedMany({ leases: [leaseOf(again)] });
  });

  it('reads inside a transaction see its own writes', async () => {
    const ex = ctx.executor();
    const account = makeAccount();
    await ex.transaction(async (tx) => {
      await tx.accountInsert({ account });
      expect(await tx.accountGet({ id: account.id })).toEqual(account);
    });
  });

  it('a nested transaction commits with the outer one', async () => {
    const ex = ctx.executor();
    const [outer, inner] = [makeAccount(), makeAccount()];
    await ex.transaction(async (tx) => {
      await tx.accountInsert({ account: outer });
      await tx.transaction((nested) => nested.accountInsert({ account: inner }));
    });
    expect(await ex.accountGet({ id: outer.id })).toEqual(outer);
    expect(await ex.accountGet({ id: inner.id })).toEqual(inner);
  });

  it('an outer throw rolls back a nested transaction that completed', async () => {
    const ex = ctx.executor();
    const inner = makeAccount();
    await expect(
      ex.transaction(async (tx) => {
        await tx.transaction((nested) => nested.accountInsert({ account: inner }));
        throw new Boom('boom');
      }),
    ).rejects.toThrow('boom');
    expect(await ex.accountGet({ id: inner.id })).toBeUndefined();
  });

  it('a nested throw caught by the outer callback undoes only the nested writes', async () => {
    const ex = ctx.executor();
    const [before, inner, after] = [makeAccount(), makeAccount(), makeAccount()];
    await ex.transaction(async (tx) => {
      await tx.accountInsert({ account: before });
      await expect(
        tx.transaction(async (nested) => {
          await nested.accountInsert({ account: inner });
          throw new Boom('inner');
        }),
      ).rejects.toThrow('inner');
      await tx.accountInsert({ account: after });
    });
    expect(await ex.accountGet({ id: before.id })).toEqual(before);
    expect(await ex.accountGet({ id: inner.id })).toBeUndefined();
    expect(await ex.accountGet({ id: after.id })).toEqual(after);
  });

  it('an operation on the root executor during a transaction is not part of it', async () => {
    const ex = ctx.executor();
    const [inside, outside] = [makeAccount(), makeAccount()];
    let concurrent: Promise<void> | undefined;
    await expect(
      ex.transaction(async (tx) => {
        await tx.accountInsert({ account: inside });
        // Not awaited here: on a single-connection driver it waits for this transaction.
        concurrent = ex.accountInsert({ account: outside });
        await tx.accountGet({ id: inside.id });
        throw new Boom('boom');
      }),
    ).rejects.toThrow('boom');
    await concurrent;
    expect(await ex.accountGet({ id: inside.id })).toBeUndefined();
    expect(await ex.accountGet({ id: outside.id })).toEqual(outside);
  });

  it('concurrent transactions each commit all of their writes', async () => {
    const ex = ctx.executor();
    const accounts = Array.from({ length: 5 }, () => [makeAccount(), makeAccount()] as const);
    await Promise.all(
      accounts.map(([first, second]) =>
        ex.transaction(async (tx) => {
          await tx.accountInsert({ account: first });
          await tx.accountInsert({ account: second });
        }),
      ),
    );
    for (const [first, second] of accounts) {
      expect(await ex.accountGet({ id: first.id })).toEqual(first);
      expect(await ex.accountGet({ id: second.id })).toEqual(second);
    }
  });
}
