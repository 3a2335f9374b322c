/**
 * Management operations: account settings, listing and deletion, management users, usage
 * counters, search index records and the DLQ count.
 */
import { expect, it } from 'vitest';
import { newId } from '../../core/ids.js';
import type { SearchIndex } from '../../core/management.js';
import { makeAccount, makeDlqEntry, makeEvent, makeMessage, T0 } from './fixtures.js';
import type { SuiteContext } from './suite.js';

const MINUTE = 60_000;

function makeIndex(ownerId: string, overrides: Partial<SearchIndex> = {}): SearchIndex {
  return {
    id: newId('idx'),
    ownerId,
    name: 'products',
    endpoint: `products-${newId('e')}`,
    type: 'payg',
    region: 'eu-west-1',
    tokenHash: 'b'.repeat(64),
    readOnlyTokenHash: 'c'.repeat(64),
    createdAt: T0,
    ...overrides,
  };
}

export function managementCases(ctx: SuiteContext): void {
  it('accountInsert keeps owner, region, budget and plan change time', async () => {
    const ex = ctx.executor();
    const account = makeAccount({
      ownerId: newId('usr'),
      region: 'eu-central-1',
      budget: 25,
      planChangedAt: T0 + 5,
    });
    await ex.accountInsert({ account });
    expect(await ex.accountGet({ id: account.id })).toEqual(account);
  });

  it('accountUpdate changes only the given fields of that account', async () => {
    const ex = ctx.executor();
    const account = makeAccount({ ownerId: newId('usr') });
    const other = makeAccount();
    await ex.accountInsert({ account });
    await ex.accountInsert({ account: other });
    expect(
      await ex.accountUpdate({ id: account.id, plan: 'paid', planChangedAt: T0 + 9, budget: 3 }),
    ).toBe(true);
    expect(await ex.accountGet({ id: account.id })).toEqual({
      ...account,
      plan: 'paid',
      planChangedAt: T0 + 9,
      budget: 3,
    });
    expect(await ex.accountUpdate({ id: account.id, passwordHash: 'd'.repeat(64) })).toBe(true);
    expect((await ex.accountGet({ id: account.id }))?.passwordHash).toBe('d'.repeat(64));
    expect(await ex.accountGet({ id: other.id })).toEqual(other);
    expect(await ex.accountUpdate({ id: newId('acct'), budget: 1 })).toBe(false);
    expect(await ex.accountUpdate({ id: account.id })).toBe(true);
  });

  it('an account keeps its sealed password beside the hash; a new password replaces both', async () => {
    const ex = ctx.executor();
    const owner = newId('usr');
    const sealed = makeAccount({ ownerId: owner, passwordSealed: 'v1.iv.tag.sealed-one' });
    // An account from before migration 010 (or made without a secret key) has no sealed form.
    const hashedOnly = makeAccount({ ownerId: owner, createdAt: T0 + 1 });
    await ex.accountInsert({ account: sealed });
    await ex.accountInsert({ account: hashedOnly });
    expect(await ex.accountGet({ id: sealed.id })).toEqual(sealed);
    const readBack = await ex.accountGet({ id: hashedOnly.id });
    expect(readBack).toEqual(hashedOnly);
    expect(readBack && 'passwordSealed' in readBack).toBe(false);
    expect(await ex.accountList({ ownerId: owner })).toEqual([sealed, hashedOnly]);

    const reset = { passwordHash: 'e'.repeat(64), passwordSealed: 'v1.iv.tag.sealed-two' };
    expect(await ex.accountUpdate({ id: hashedOnly.id, ...reset })).toBe(true);
    expect(await ex.accountGet({ id: hashedOnly.id })).toEqual({ ...hashedOnly, ...reset });
    expect(await ex.accountGet({ id: sealed.id })).toEqual(sealed);
  });

  it('a search index keeps its sealed tokens beside the hashes; a reset replaces all four', async () => {
    const ex = ctx.executor();
    const owner = newId('usr');
    const sealed = makeIndex(owner, {
      tokenSealed: 'v1.iv.tag.rw',
      readOnlyTokenSealed: 'v1.iv.tag.ro',
    });
    const hashedOnly = makeIndex(owner, { createdAt: T0 + 1 });
    await ex.searchIndexInsert({ index: sealed });
    await ex.searchIndexInsert({ index: hashedOnly });
    expect(await ex.searchIndexGet({ ownerId: owner, id: sealed.id })).toEqual(sealed);
    const readBack = await ex.searchIndexGet({ ownerId: owner, id: hashedOnly.id });
    expect(readBack).toEqual(hashedOnly);
    expect(readBack && ('tokenSealed' in readBack || 'readOnlyTokenSealed' in readBack)).toBe(
      false,
    );
    expect(await ex.searchIndexList({ ownerId: owner })).toEqual([sealed, hashedOnly]);

    const reset = {
      tokenHash: '1'.repeat(64),
      readOnlyTokenHash: '2'.repeat(64),
      tokenSealed: 'v1.iv.tag.rw2',
      readOnlyTokenSealed: 'v1.iv.tag.ro2',
    };
    expect(await ex.searchIndexUpdate({ ownerId: owner, id: hashedOnly.id, ...reset })).toBe(true);
    expect(await ex.searchIndexGet({ ownerId: owner, id: hashedOnly.id })).toEqual({
      ...hashedOnly,
      ...reset,
    });
    expect(await ex.searchIndexGet({ ownerId: owner, id: sealed.id })).toEqual(sealed);
  });

  it('accountList returns the owner’s accounts only, oldest first', async () => {
    const ex = ctx.executor();
    const owner = newId('usr');
    const second = makeAccount({ ownerId: owner, createdAt: T0 + 2 });
    const first = makeAccount({ ownerId: owner, createdAt: T0 + 1 });
    await ex.accountInsert({ account: second });
    await ex.accountInsert({ account: first });
    await ex.accountInsert({ account: makeAccount({ ownerId: newId('usr') }) });
    expect(await ex.accountList({ ownerId: owner })).toEqual([first, second]);
    expect(await ex.accountList({ ownerId: newId('usr') })).toEqual([]);
  });

  it('accountDelete removes the account with its messages, events, DLQ and usage only', async () => {
    const ex = ctx.executor();
    const gone = makeAccount();
    const kept = makeAccount();
    for (const account of [gone, kept]) {
      await ex.accountInsert({ account });
      const message = makeMessage(account.id, { dueAt: T0 + 3_600_000 });
      await ex.messageInsertMany({ messages: [message] });
      await ex.eventInsertMany({ events: [makeEvent(message)] });
      await ex.dlqInsertMany({ entries: [makeDlqEntry(makeMessage(account.id))] });
      await ex.usageAddMany({
        counts: [{ subjectId: account.id, minute: T0, metric: 'messages', value: 1 }],
      });
    }
    expect(await ex.accountDelete({ id: gone.id })).toBe(true);
    expect(await ex.accountGet({ id: gone.id })).toBeUndefined();
    expect(await ex.dlqCount({ accountId: gone.id })).toBe(0);
    const events = await ex.eventList({ accountId: gone.id, filter: {}, count: 10 });
    expect(events.items).toEqual([]);
    expect(await ex.messageDeleteMany({ accountId: gone.id, filter: {} })).toEqual([]);
    const window = { from: T0, to: T0 + MINUTE, stepMs: MINUTE };
    expect(await ex.usageSumByStep({ subjectId: gone.id, ...window })).toEqual([]);

    expect(await ex.accountGet({ id: kept.id })).toEqual(kept);
    expect(await ex.dlqCount({ accountId: kept.id })).toBe(1);
    expect((await ex.eventList({ accountId: kept.id, filter: {}, count: 10 })).items).toHaveLength(
      1,
    );
    expect(await ex.usageSumByStep({ subjectId: kept.id, ...window })).toEqual([
      { bucket: 0, metric: 'messages', value: 1 },
    ]);
    expect(await ex.accountDelete({ id: gone.id })).toBe(false);
  });

  it('userInsert then userGetByEmail; a taken e-mail rejects', async () => {
    const ex = ctx.executor();
    const email = `${newId('u')}@example.com`;
    const user = {
      id: newId('usr'),
      email,
      apiKeyHash: 'e'.repeat(64),
      admin: true,
      createdAt: T0,
    };
    await ex.userInsert({ user });
    expect(await ex.userGetByEmail({ email })).toEqual(user);
    const plainUser = { ...user, id: newId('usr'), email: `x${email}`, admin: false };
    await ex.userInsert({ user: plainUser });
    expect(await ex.userGetByEmail({ email: plainUser.email })).toEqual(plainUser);
    await expect(ex.userInsert({ user: { ...user, id: newId('usr') } })).rejects.toThrow();
    expect(await ex.userGetByEmail({ email: `nobody-${email}` })).toBeUndefined();
  });

  it('usageAddMany adds up within a call and across calls; usageSumByStep buckets the sums', async () => {
    const ex = ctx.executor();
    const subjectId = newId('acct');
    await ex.usageAddMany({
      counts: [
        { subjectId, minute: T0, metric: 'messages', value: 2 },
        { subjectId, minute: T0, metric: 'messages', value: 3 },
        { subjectId, minute: T0 + MINUTE, metric: 'messages', value: 1 },
        { subjectId, minute: T0 + 2 * MINUTE, metric: 'delivered', value: 4 },
        { subjectId, minute: T0 + 5 * MINUTE, metric: 'messages', value: 100 },
        { subjectId: newId('acct'), minute: T0, metric: 'messages', value: 50 },
      ],
    });
    await ex.usageAddMany({ counts: [{ subjectId, minute: T0, metric: 'messages', value: 10 }] });

    const perMinute = await ex.usageSumByStep({
      subjectId,
      from: T0,
      to: T0 + 5 * MINUTE,
      stepMs: MINUTE,
    });
    expect(perMinute).toEqual([
      { bucket: 0, metric: 'messages', value: 15 },
      { bucket: 1, metric: 'messages', value: 1 },
      { bucket: 2, metric: 'delivered', value: 4 },
    ]);
    const twoMinuteSteps = await ex.usageSumByStep({
      subjectId,
      from: T0,
      to: T0 + 6 * MINUTE,
      stepMs: 2 * MINUTE,
      metrics: ['messages'],
    });
    expect(twoMinuteSteps).toEqual([
      { bucket: 0, metric: 'messages', value: 16 },
      { bucket: 2, metric: 'messages', value: 100 },
    ]);
    const shifted = await ex.usageSumByStep({
      subjectId,
      from: T0 + MINUTE,
      to: T0 + 3 * MINUTE,
      stepMs: 2 * MINUTE,
    });
    expect(shifted).toEqual([
      { bucket: 0, metric: 'delivered', value: 4 },
      { bucket: 0, metric: 'messages', value: 1 },
    ]);
  });

  it('search indexes: insert, get, list, update and delete, scoped by owner', async () => {
    const ex = ctx.executor();
    const owner = newId('usr');
    const stranger = newId('usr');
    const a = makeIndex(owner, { createdAt: T0 + 1 });
    const b = makeIndex(owner, { createdAt: T0 + 2, type: 'free', region: 'us-central1' });
    await ex.searchIndexInsert({ index: b });
    await ex.searchIndexInsert({ index: a });
    await ex.searchIndexInsert({ index: makeIndex(stranger) });
    expect(await ex.searchIndexGet({ ownerId: owner, id: a.id })).toEqual(a);
    expect(await ex.searchIndexGet({ ownerId: stranger, id: a.id })).toBeUndefined();
    expect(await ex.searchIndexList({ ownerId: owner })).toEqual([a, b]);

    expect(await ex.searchIndexUpdate({ ownerId: stranger, id: a.id, name: 'x' })).toBe(false);
    expect(await ex.searchIndexUpdate({ ownerId: owner, id: a.id, name: 'renamed' })).toBe(true);
    const hashes = { tokenHash: 'f'.repeat(64), readOnlyTokenHash: '0'.repeat(64) };
    expect(await ex.searchIndexUpdate({ ownerId: owner, id: a.id, ...hashes })).toBe(true);
    expect(await ex.searchIndexGet({ ownerId: owner, id: a.id })).toEqual({
      ...a,
      name: 'renamed',
      ...hashes,
    });

    expect(await ex.searchIndexDelete({ ownerId: stranger, id: a.id })).toBe(false);
    expect(await ex.searchIndexDelete({ ownerId: owner, id: a.id })).toBe(true);
    expect(await ex.searchIndexGet({ ownerId: owner, id: a.id })).toBeUndefined();
    expect(await ex.searchIndexList({ ownerId: owner })).toEqual([b]);
  });

  it('dlqCount counts the account’s entries only', async () => {
    const ex = ctx.executor();
    const accountId = newId('acct');
    expect(await ex.dlqCount({ accountId })).toBe(0);
    await ex.dlqInsertMany({
      entries: [
        makeDlqEntry(makeMessage(accountId)),
        makeDlqEntry(makeMessage(accountId)),
        makeDlqEntry(makeMessage(newId('acct'))),
      ],
    });
    expect(await ex.dlqCount({ accountId })).toBe(2);
  });

  it('accountDelete inside a transaction rolls back with it', async () => {
    const ex = ctx.executor();
    const account = makeAccount();
    await ex.accountInsert({ account });
    await expect(
      ex.transaction(async (tx) => {
        expect(await tx.accountDelete({ id: account.id })).toBe(true);
        throw new Error('abort');
      }),
    ).rejects.toThrow('abort');
    expect(await ex.accountGet({ id: account.id })).toEqual(account);
  });
}
