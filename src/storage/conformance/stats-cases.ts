/**
 * The counts behind the `/metrics` gauges (messages by state, the DLQ size) and readiness
 * (`migrationStatus`). Counting has no account scope, so each case starts from an empty messages
 * table (`clearMessages`); the DLQ count is checked by its change, since other cases keep entries.
 */
import { beforeEach, expect, it } from 'vitest';
import type { Message } from '../../core/types.js';
import type { Executor } from '../driver.js';
import { clearMessages, makeAccount, makeDlqEntry, makeMessage, T0 } from './fixtures.js';
import type { SuiteContext } from './suite.js';

const LEASE = 60_000;

export function statsCases(ctx: SuiteContext): void {
  let ex: Executor;
  let accountId: string;
  beforeEach(async () => {
    ex = ctx.executor();
    await clearMessages(ex);
    const account = makeAccount();
    accountId = account.id;
    await ex.accountInsert({ account });
  });

  const keyed = (): Message =>
    makeMessage(accountId, {
      spec: {
        method: 'POST',
        headers: {},
        flowControl: { key: 'k', parallelism: 1, periodSec: 1 },
      },
    });

  it('messageCountByState counts due, delayed, waiting and in-flight messages', async () => {
    const due = Array.from({ length: 3 }, () => makeMessage(accountId));
    const delayed = Array.from({ length: 2 }, () =>
      makeMessage(accountId, { dueAt: T0 + 10 * LEASE, notBefore: T0 + 10 * LEASE }),
    );
    // Parallelism 1: the first keyed message is admitted at once (due), the other two wait.
    await ex.messageInsertMany({ messages: [...due, ...delayed, keyed(), keyed(), keyed()] });
    expect(await ex.messageCountByState({ now: T0, limit: 100 })).toEqual({
      due: 4,
      delayed: 2,
      waiting: 2,
      inFlight: 0,
    });
    await ex.messageClaimDue({ now: T0, limit: 3, leaseUntil: T0 + LEASE });
    expect(await ex.messageCountByState({ now: T0, limit: 100 })).toEqual({
      due: 1,
      delayed: 2,
      waiting: 2,
      inFlight: 3,
    });
    // An expired lease is due again, not in flight.
    expect(await ex.messageCountByState({ now: T0 + LEASE, limit: 100 })).toEqual({
      due: 4,
      delayed: 2,
      waiting: 2,
      inFlight: 0,
    });
  });

  it('messageCountByState stops each count at the limit', async () => {
    const due = Array.from({ length: 4 }, () => makeMessage(accountId));
    const delayed = Array.from({ length: 3 }, () => makeMessage(accountId, { dueAt: T0 + LEASE }));
    await ex.messageInsertMany({ messages: [...due, ...delayed, keyed(), keyed(), keyed()] });
    await ex.messageClaimDue({ now: T0, limit: 3, leaseUntil: T0 + LEASE });
    expect(await ex.messageCountByState({ now: T0, limit: 2 })).toEqual({
      due: 2,
      delayed: 2,
      waiting: 2,
      inFlight: 2,
    });
  });

  it('messageCountByState with an account counts only that account’s messages', async () => {
    const other = makeAccount();
    await ex.accountInsert({ account: other });
    const mine = [makeMessage(accountId), makeMessage(accountId)];
    const theirs = [
      makeMessage(other.id),
      makeMessage(other.id, { dueAt: T0 + LEASE, notBefore: T0 + LEASE }),
    ];
    await ex.messageInsertMany({ messages: [...mine, ...theirs, keyed(), keyed()] });
    await ex.messageClaimDue({ now: T0, limit: 10, leaseUntil: T0 + LEASE });
    // Claimed: both of mine, my first keyed one and the other account's due one.
    expect(await ex.messageCountByState({ now: T0, limit: 100, accountId })).toEqual({
      due: 0,
      delayed: 0,
      waiting: 1,
      inFlight: 3,
    });
    expect(await ex.messageCountByState({ now: T0, limit: 100, accountId: other.id })).toEqual({
      due: 0,
      delayed: 1,
      waiting: 0,
      inFlight: 1,
    });
  });

  it('dlqCountAll counts every account’s DLQ entries', async () => {
    const other = makeAccount();
    await ex.accountInsert({ account: other });
    const before = await ex.dlqCountAll();
    const mine = [makeDlqEntry(makeMessage(accountId)), makeDlqEntry(makeMessage(accountId))];
    await ex.dlqInsertMany({ entries: [...mine, makeDlqEntry(makeMessage(other.id))] });
    expect(await ex.dlqCountAll()).toBe(before + 3);
    await ex.dlqDeleteMany({ accountId, dlqIds: mine.map((e) => e.dlqId) });
    expect(await ex.dlqCountAll()).toBe(before + 1);
  });

  it('migrationStatus: a migrated database has nothing pending; a closed driver rejects', async () => {
    const status = await ctx.driver().migrationStatus();
    expect(status.pending).toEqual([]);
    expect(status.latest).toBeGreaterThanOrEqual(9);
    const closed = await ctx.open();
    await closed.migrate();
    await ctx.close(closed);
    await expect(closed.migrationStatus()).rejects.toThrow();
  });
}
