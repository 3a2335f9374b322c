/**
 * The engine's claim under `max_global_parallelism` (`messageClaimDueLimited`). Claiming has no
 * account scope, so every case starts by clearing the messages table (see `clearMessages`).
 */
import { beforeEach, describe, expect, it, type TestContext } from 'vitest';
import type { Account, Message } from '../../core/types.js';
import type { Executor, OriginRoom } from '../driver.js';
import { clearMessages, leaseOf, makeAccount, makeMessage, T0 } from './fixtures.js';
import type { SuiteContext } from './suite.js';

const LEASE_MS = 30_000;

/** Skips a case on SQLite, with the reason the contract gives. */
function skipOnSqlite(ctx: SuiteContext, t: TestContext): void {
  t.skip(
    ctx.driver().name === 'sqlite',
    'SQLite leaves max_global_parallelism to the engine: one process owns the database, and ' +
      'engine/account-slots.ts counts each account’s deliveries in memory',
  );
}

export function claimLimitCases(ctx: SuiteContext): void {
  let ex: Executor;
  let free: Account;
  let paid: Account;
  beforeEach(async () => {
    ex = ctx.executor();
    await clearMessages(ex);
    free = makeAccount({ plan: 'free' });
    paid = makeAccount({ plan: 'paid' });
    await ex.accountInsert({ account: free });
    await ex.accountInsert({ account: paid });
  });

  /** One message of `account` per due time (ms after T0). */
  async function insertDue(account: Account, ...offsets: number[]): Promise<Message[]> {
    const messages = offsets.map((offset) => makeMessage(account.id, { dueAt: T0 + offset }));
    await ex.messageInsertMany({ messages });
    return messages;
  }

  const claim = (now: number, limit: number, maxInFlightByPlan: Record<string, number>) =>
    ex.messageClaimDueLimited({ now, limit, leaseUntil: now + LEASE_MS, maxInFlightByPlan });
  const ids = (messages: readonly Message[]) => messages.map((m) => m.id);

  it('without a limit for the plan (absent or 0) it claims like messageClaimDue', async () => {
    const [late, first] = await insertDue(free, 20, 10);
    const [other] = await insertDue(paid, 15);
    const { messages, atLimit } = await claim(T0 + 100, 10, { free: 0 });
    expect(ids(messages)).toEqual([first?.id, other?.id, late?.id]);
    expect(messages.every((m) => m.dueAt === T0 + 100 + LEASE_MS && m.leaseToken)).toBe(true);
    expect(atLimit).toEqual([]);
    expect(await claim(T0 + 100, 10, {})).toMatchObject({
      messages: [],
      atLimit: [],
      gatesReady: false,
    });
  });

  it('takes at most an account’s free slots, earliest first, and names it when it is at its limit', async (t) => {
    skipOnSqlite(ctx, t);
    const limits = { free: 3 }; // paid: no limit
    const [a1, a2, a3, a4, a5] = await insertDue(free, 10, 20, 30, 40, 50);
    const [b1, b2] = await insertDue(paid, 15, 55);
    const now = T0 + 100;

    expect(await claim(now, 1, limits)).toMatchObject({ messages: [{ id: a1?.id }], atLimit: [] });
    // a1 holds one of the three slots: two are left.
    const second = await claim(now, 10, limits);
    expect(ids(second.messages)).toEqual([b1?.id, a2?.id, a3?.id, b2?.id]);
    expect(second.atLimit).toEqual([free.id]);
    expect(await ex.messageCountInFlight({ accountId: free.id, now })).toBe(3);
    expect(await claim(now, 10, limits)).toMatchObject({
      messages: [],
      atLimit: [free.id],
      gatesReady: false,
    });

    // A delivery ends (its row is deleted): its slot is free again.
    const leased = second.messages.find((m) => m.id === a2?.id);
    if (!leased) throw new Error('a2 was not claimed');
    expect(await ex.messageDeleteLeasedMany({ leases: [leaseOf(leased)] })).toEqual([a2?.id]);
    const third = await claim(now, 10, limits);
    expect(ids(third.messages)).toEqual([a4?.id]);
    expect(third.atLimit).toEqual([free.id]);

    // A node that dies holds its slots until its leases expire; then they count no more, and
    // the expired messages are due again with the rest.
    const expired = now + LEASE_MS;
    expect(await ex.messageCountInFlight({ accountId: free.id, now: expired })).toBe(0);
    const afterExpiry = await claim(expired, 10, limits);
    const ofFree = afterExpiry.messages.filter((m) => m.accountId === free.id);
    expect(ofFree).toHaveLength(3);
    expect(ofFree[0]?.id).toBe(a5?.id); // due before the expired leases
    expect([a1?.id, a3?.id, a4?.id]).toEqual(expect.arrayContaining(ids(ofFree.slice(1))));
    const ofPaid = afterExpiry.messages.filter((m) => m.accountId === paid.id);
    expect(ids(ofPaid).sort()).toEqual([b1?.id, b2?.id].sort());
    expect(afterExpiry.atLimit).toEqual([free.id]);
  });

  it('counts releases and retries as ended, in a caller’s transaction too', async (t) => {
    skipOnSqlite(ctx, t);
    const limits = { free: 2 };
    await insertDue(free, 10, 20, 30, 40);
    const now = T0 + 100;
    const first = await ex.transaction(async (tx) => {
      const claimed = await tx.messageClaimDueLimited({
        now,
        limit: 10,
        leaseUntil: now + LEASE_MS,
        maxInFlightByPlan: limits,
      });
      // The lock is the transaction's: a second limited claim in it does not wait for itself.
      const again = await tx.messageClaimDueLimited({
        now,
        limit: 10,
        leaseUntil: now + LEASE_MS,
        maxInFlightByPlan: limits,
      });
      expect(again).toMatchObject({ messages: [], atLimit: [free.id], gatesReady: false });
      return claimed;
    });
    expect(first.messages).toHaveLength(2);
    const [one, two] = first.messages;
    if (!one || !two) throw new Error('expected two claims');
    await ex.messageReleaseMany({ leases: [leaseOf(one)], dueAt: now + 5_000 });
    await ex.messageRetryManyLeased({
      retries: [{ ...leaseOf(two), dueAt: now + 5_000, retried: 1 }],
    });
    expect(await ex.messageCountInFlight({ accountId: free.id, now })).toBe(0);
    const next = await claim(now, 10, limits);
    expect(next.messages).toHaveLength(2);
    expect(next.atLimit).toEqual([]);
  });

  describe("origin rooms (the engine's congested destinations)", () => {
    /** One message of `account` to `url` per due time (ms after T0). */
    async function insertTo(url: string, ...offsets: number[]): Promise<Message[]> {
      const messages = offsets.map((o) => makeMessage(free.id, { url, dueAt: T0 + o }));
      await ex.messageInsertMany({ messages });
      return messages;
    }
    const claimRooms = (
      limit: number,
      originRooms: OriginRoom[],
      maxInFlightByPlan: Record<string, number> = {},
    ) =>
      ex.messageClaimDueLimited({
        now: T0 + 1_000,
        limit,
        leaseUntil: T0 + 1_000 + LEASE_MS,
        maxInFlightByPlan,
        originRooms,
      });

    it('passes over an origin without room to the messages behind it, which stay due', async () => {
      const slow = await insertTo('http://slow.example:8080/a?x=1', 1, 2, 3, 4, 5);
      const [other] = await insertTo('http://other.example/b', 6);
      const { messages } = await claimRooms(2, [{ origin: 'http://slow.example:8080', room: 0 }]);
      expect(ids(messages)).toEqual([other?.id]);
      // Left due: a claim without rooms takes them, earliest first.
      expect(ids((await claimRooms(10, [])).messages)).toEqual(ids(slow));
    });

    it("takes at most an origin's room, earliest first, and fills the limit from the others", async () => {
      const [s1, s2, s3] = await insertTo('https://slow.example/x', 1, 2, 3);
      const [o1, o2] = await insertTo('https://other.example/y', 4, 5);
      const { messages } = await claimRooms(3, [{ origin: 'https://slow.example', room: 1 }]);
      expect(ids(messages)).toEqual([s1?.id, o1?.id, o2?.id]);
      expect(ids((await claimRooms(10, [])).messages)).toEqual([s2?.id, s3?.id]);
    });

    it('tells origins apart by scheme and port, and reads the host as URLs do', async () => {
      const [plain] = await insertTo('http://host.example/a', 1);
      const [tls] = await insertTo('https://host.example/a', 2);
      const [port] = await insertTo('http://host.example:81/a', 3);
      const [upper] = await insertTo('HTTP://HOST.example/b', 4);
      const { messages } = await claimRooms(10, [{ origin: 'http://host.example', room: 0 }]);
      expect(ids(messages)).toEqual([tls?.id, port?.id]);
      expect(ids((await claimRooms(10, [])).messages)).toEqual([plain?.id, upper?.id]);
    });

    it('applies the account limit to what the rooms leave', async (t) => {
      skipOnSqlite(ctx, t);
      const slow = await insertTo('http://slow.example/a', 1, 2);
      const [o1, o2, o3] = await insertTo('http://other.example/b', 3, 4, 5);
      const { messages, atLimit } = await claimRooms(
        10,
        [{ origin: 'http://slow.example', room: 0 }],
        { free: 2 },
      );
      expect(ids(messages)).toEqual([o1?.id, o2?.id]);
      expect(atLimit).toEqual([free.id]);
      // Left due, both the room's and the account's: a claim without either limit takes them.
      expect(ids((await claimRooms(10, [])).messages)).toEqual([...ids(slow), o3?.id]);
    });
  });
}
