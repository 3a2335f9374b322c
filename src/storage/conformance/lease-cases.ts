/**
 * Claims, leases and fencing. Claiming has no account scope, so every case starts by clearing the
 * messages table (see `clearMessages`).
 */
import { beforeEach, expect, it } from 'vitest';
import { newId, newLeaseToken, newMessageId } from '../../core/ids.js';
import type { EventRecord, Message } from '../../core/types.js';
import type { Executor } from '../driver.js';
import {
  clearMessages,
  leaseOf,
  makeEvent,
  makeMessage,
  nextDueAt,
  plain,
  T0,
} from './fixtures.js';
import type { SuiteContext } from './suite.js';

const LEASE_MS = 30_000;

export function leaseCases(ctx: SuiteContext): void {
  let ex: Executor;
  let accountId: string;
  beforeEach(async () => {
    ex = ctx.executor();
    accountId = newId('acct');
    await clearMessages(ex);
  });

  /** Inserts one message per due time, in the given order. */
  async function insertDue(...dueTimes: number[]): Promise<Message[]> {
    const messages = dueTimes.map((dueAt) => makeMessage(accountId, { dueAt }));
    await ex.messageInsertMany({ messages });
    return messages;
  }

  it('messageClaimDue claims due rows (dueAt <= now) earliest first, up to limit', async () => {
    const [late, first, second, onTime, future] = await insertDue(
      T0 + 300,
      T0 + 100,
      T0 + 200,
      T0 + 1_000,
      T0 + 1_001,
    );
    const lease = { now: T0 + 1_000, leaseUntil: T0 + LEASE_MS };
    const claimed = await ex.messageClaimDue({ ...lease, limit: 3 });
    expect(claimed.map((m) => m.id)).toEqual([first?.id, second?.id, late?.id]);

    // dueAt == now is due; dueAt > now (`future`) is not.
    const rest = await ex.messageClaimDue({ ...lease, limit: 10 });
    expect(rest.map((m) => m.id)).toEqual([onTime?.id]);
    expect(await ex.messageClaimDue({ ...lease, limit: 10 })).toEqual([]);
    const [last] = await ex.messageClaimDue({ ...lease, now: T0 + 1_001, limit: 10 });
    expect(last?.id).toBe(future?.id);
  });

  it('messageInsertMany stores a ClaimedMessage leased: no claim takes it until the lease ends', async () => {
    const message = makeMessage(accountId, { dueAt: T0, createdAt: T0 });
    const leased = { ...message, dueAt: T0 + LEASE_MS, leaseToken: newLeaseToken() };
    const other = makeMessage(accountId, { dueAt: T0, createdAt: T0 });
    const held = { ...other, dueAt: T0 + LEASE_MS, leaseToken: newLeaseToken() };
    await ex.messageInsertMany({ messages: [leased, held] });
    const lease = { now: T0 + 1, limit: 10, leaseUntil: T0 + 1 + LEASE_MS };
    expect(await ex.messageClaimDue(lease)).toEqual([]);
    // Fenced by its token, as a claimed message is.
    const stale = { id: message.id, leaseToken: newLeaseToken() };
    expect(await ex.messageDeleteLeasedMany({ leases: [stale] })).toEqual([]);
    expect(await ex.messageDeleteLeasedMany({ leases: [leaseOf(leased)] })).toEqual([message.id]);
    // Once its lease has ended, the other is due again, and a claim takes it with a new token.
    const [reclaimed] = await ex.messageClaimDue({ ...lease, now: T0 + LEASE_MS });
    expect(reclaimed?.id).toBe(other.id);
    expect(reclaimed?.leaseToken).not.toBe(held.leaseToken);
  });

  it('a claim sets dueAt to leaseUntil, returns the whole message and a fresh token', async () => {
    const [message] = await insertDue(T0);
    const leaseUntil = T0 + LEASE_MS;
    const [claimed] = await ex.messageClaimDue({ now: T0, limit: 1, leaseUntil });
    if (!claimed || !message) throw new Error('nothing claimed');
    const { leaseToken, ...rest } = claimed;
    expect(plain(rest)).toEqual(plain({ ...message, dueAt: leaseUntil }));
    expect(leaseToken).toMatch(/\S{8,}/);
    const stored = await ex.messageGet({ accountId, id: message.id });
    expect(stored?.dueAt).toBe(leaseUntil);
  });

  it('every claimed row gets its own token', async () => {
    await insertDue(T0, T0, T0, T0, T0);
    const claimed = await ex.messageClaimDue({ now: T0, limit: 5, leaseUntil: T0 + LEASE_MS });
    expect(claimed).toHaveLength(5);
    expect(new Set(claimed.map((m) => m.leaseToken)).size).toBe(5);
  });

  it('a claimed message is not claimed again before leaseUntil, and is at leaseUntil', async () => {
    const [message] = await insertDue(T0);
    const leaseUntil = T0 + LEASE_MS;
    const [first] = await ex.messageClaimDue({ now: T0, limit: 10, leaseUntil });
    expect(first?.id).toBe(message?.id);
    const early = await ex.messageClaimDue({ now: leaseUntil - 1, limit: 10, leaseUntil: T0 * 2 });
    expect(early).toEqual([]);

    // The first claimer died: its lease expires and the message is claimable again.
    const [second] = await ex.messageClaimDue({
      now: leaseUntil,
      limit: 10,
      leaseUntil: leaseUntil + LEASE_MS,
    });
    expect(second?.id).toBe(message?.id);
    expect(second?.leaseToken).not.toBe(first?.leaseToken);
    if (!first || !second) throw new Error('nothing claimed');

    // The old owner is fenced out; the new one completes.
    expect(await ex.messageDeleteLeasedMany({ leases: [leaseOf(first)] })).toEqual([]);
    expect(await ex.messageDeleteLeasedMany({ leases: [leaseOf(second)] })).toEqual([second.id]);
    expect(await ex.messageGet({ accountId, id: second.id })).toBeUndefined();
  });

  it('a stale token cannot delete, retry, release or extend', async () => {
    const [message] = await insertDue(T0);
    const [claimed] = await ex.messageClaimDue({ now: T0, limit: 1, leaseUntil: T0 + LEASE_MS });
    if (!message || !claimed) throw new Error('nothing claimed');
    const stale = { id: message.id, leaseToken: newLeaseToken() };
    const before = await ex.messageGet({ accountId, id: message.id });

    expect(await ex.messageDeleteLeasedMany({ leases: [stale] })).toEqual([]);
    expect(
      await ex.messageRetryManyLeased({ retries: [{ ...stale, dueAt: T0 + 5, retried: 1 }] }),
    ).toEqual([]);
    expect(await ex.messageReleaseMany({ leases: [stale], dueAt: T0 })).toEqual([]);
    expect(await ex.messageLeaseExtendMany({ leases: [stale], leaseUntil: T0 * 2 })).toEqual([]);
    expect(plain(await ex.messageGet({ accountId, id: message.id }))).toEqual(plain(before));

    // The holder of the current token is unaffected.
    expect(
      await ex.messageLeaseExtendMany({
        leases: [leaseOf(claimed)],
        leaseUntil: T0 + 2 * LEASE_MS,
      }),
    ).toEqual([message.id]);
  });

  it('fenced operations return only the ids they applied to, in a mixed batch', async () => {
    const messages = await insertDue(T0, T0 + 1, T0 + 2);
    const claimed = await ex.messageClaimDue({ now: T0 + 2, limit: 3, leaseUntil: T0 + LEASE_MS });
    const [a, b, c] = claimed;
    if (!a || !b || !c) throw new Error('nothing claimed');
    const unknown = { id: newMessageId(), leaseToken: a.leaseToken };
    const stale = { id: b.id, leaseToken: newLeaseToken() };
    const deleted = await ex.messageDeleteLeasedMany({
      leases: [leaseOf(a), unknown, stale, leaseOf(c)],
    });
    expect(deleted).toEqual([a.id, c.id]);
    expect(await ex.messageGet({ accountId, id: b.id })).toBeDefined();
    expect(messages).toHaveLength(3);
  });

  it('messageFinishMany logs, deletes held leases, then logs their events; a lost one, nothing', async () => {
    await insertDue(T0, T0 + 1, T0 + 2);
    const claimed = await ex.messageClaimDue({ now: T0 + 2, limit: 3, leaseUntil: T0 + LEASE_MS });
    const [a, b, c] = claimed;
    if (!a || !b || !c) throw new Error('nothing claimed');
    const active = claimed.map((m) => makeEvent(m, { state: 'ACTIVE', time: T0 + 3 }));
    const delivered = (m: Message) => [
      makeEvent(m, { state: 'DELIVERED', time: T0 + 4, responseStatus: 200 }),
    ];
    const stale = { id: b.id, leaseToken: newLeaseToken() };
    const deleted = await ex.messageFinishMany({
      events: active,
      finished: [
        { lease: leaseOf(c), events: delivered(c) },
        { lease: stale, events: delivered(b) },
        { lease: leaseOf(a), events: delivered(a) },
      ],
    });
    expect(deleted).toEqual([c.id, a.id]);
    expect(await ex.messageGet({ accountId, id: a.id })).toBeUndefined();
    expect(await ex.messageGet({ accountId, id: b.id })).toBeDefined();
    expect(await ex.messageGet({ accountId, id: c.id })).toBeUndefined();
    const page = await ex.eventList({ accountId, filter: {}, count: 10 });
    // Oldest first: the given events, then the finished ones' in input order.
    expect([...page.items].reverse().map((e) => [e.messageId, e.state])).toEqual([
      [a.id, 'ACTIVE'],
      [b.id, 'ACTIVE'],
      [c.id, 'ACTIVE'],
      [c.id, 'DELIVERED'],
      [a.id, 'DELIVERED'],
    ]);
  });

  it('messageFinishMany: a held lease writes its events (ACTIVE carried), a lost one its unheld', async () => {
    await insertDue(T0, T0 + 1);
    const claimed = await ex.messageClaimDue({ now: T0 + 1, limit: 2, leaseUntil: T0 + LEASE_MS });
    const [a, b] = claimed;
    if (!a || !b) throw new Error('nothing claimed');
    const finish = (m: Message, lease: { id: string; leaseToken: string }) => ({
      lease,
      events: [
        makeEvent(m, { state: 'DELIVERED', time: T0 + 4, responseStatus: 200, activeAt: T0 + 3 }),
      ],
      unheld: [makeEvent(m, { state: 'ACTIVE', time: T0 + 3 })],
    });
    const stale = { id: b.id, leaseToken: newLeaseToken() };
    const deleted = await ex.messageFinishMany({
      events: [],
      finished: [finish(a, leaseOf(a)), finish(b, stale)],
    });
    expect(deleted).toEqual([a.id]);
    const page = await ex.eventList({ accountId, filter: {}, count: 10 });
    expect([...page.items].reverse().map((e) => [e.messageId, e.state, e.time])).toEqual([
      [a.id, 'ACTIVE', T0 + 3],
      [a.id, 'DELIVERED', T0 + 4],
      [b.id, 'ACTIVE', T0 + 3],
    ]);
  });

  it('messageFinishMany writes nothing when one of its events is bad', async () => {
    await insertDue(T0, T0);
    const claimed = await ex.messageClaimDue({ now: T0, limit: 2, leaseUntil: T0 + LEASE_MS });
    const [a, b] = claimed;
    if (!a || !b) throw new Error('nothing claimed');
    // A NOT NULL column left empty: the insert fails after the delete ran.
    const bad = { ...makeEvent(b, { state: 'DELIVERED' }), url: undefined };
    await expect(
      ex.messageFinishMany({
        events: [makeEvent(a, { state: 'ACTIVE' })],
        finished: [
          { lease: leaseOf(a), events: [makeEvent(a, { state: 'DELIVERED' })] },
          { lease: leaseOf(b), events: [bad as unknown as EventRecord] },
        ],
      }),
    ).rejects.toThrow();
    expect((await ex.eventList({ accountId, filter: {}, count: 10 })).items).toEqual([]);
    // Both leases still hold.
    expect(await ex.messageDeleteLeasedMany({ leases: claimed.map(leaseOf) })).toEqual([
      a.id,
      b.id,
    ]);
  });

  it('the engine’s claim reads the next due time as it leaves the table', async () => {
    await insertDue(T0, T0 + 50, T0 + 5_000);
    const claim = async (now: number) => {
      const result = await ex.messageClaimDueLimited({
        now,
        limit: 10,
        leaseUntil: now + LEASE_MS,
        maxInFlightByPlan: {},
      });
      return result.nextDueAt;
    };
    expect(await claim(T0 + 10)).toBe(T0 + 50);
    expect(await claim(T0 + 100)).toBe(T0 + 5_000);
    // Nothing waits any more: the earliest lease expiry (the first claim's) is next.
    expect(await claim(T0 + 6_000)).toBe(T0 + 10 + LEASE_MS);
    await ex.messageDeleteMany({ accountId, filter: {} });
    expect(await claim(T0 + 7_000)).toBeUndefined();
  });

  it('messageRetryManyLeased sets dueAt and retried, and ends the lease', async () => {
    const [message] = await insertDue(T0);
    const [claimed] = await ex.messageClaimDue({ now: T0, limit: 1, leaseUntil: T0 + LEASE_MS });
    if (!message || !claimed) throw new Error('nothing claimed');
    const retry = { ...leaseOf(claimed), dueAt: T0 + 5_000, retried: 1 };
    expect(await ex.messageRetryManyLeased({ retries: [retry] })).toEqual([message.id]);

    const stored = await ex.messageGet({ accountId, id: message.id });
    expect(stored?.dueAt).toBe(T0 + 5_000);
    expect(stored?.retried).toBe(1);
    // The token is cleared: it fences nothing any more.
    expect(await ex.messageRetryManyLeased({ retries: [retry] })).toEqual([]);
    expect(await ex.messageDeleteLeasedMany({ leases: [leaseOf(claimed)] })).toEqual([]);

    expect(await ex.messageClaimDue({ now: T0 + 4_999, limit: 1, leaseUntil: T0 })).toEqual([]);
    const [again] = await ex.messageClaimDue({ now: T0 + 5_000, limit: 1, leaseUntil: T0 * 2 });
    expect(again?.id).toBe(message.id);
    expect(again?.retried).toBe(1);
  });

  it('messageReleaseMany makes the message due at dueAt and ends the lease', async () => {
    const [message] = await insertDue(T0);
    const [claimed] = await ex.messageClaimDue({ now: T0, limit: 1, leaseUntil: T0 + LEASE_MS });
    if (!message || !claimed) throw new Error('nothing claimed');
    expect(await ex.messageReleaseMany({ leases: [leaseOf(claimed)], dueAt: T0 + 10 })).toEqual([
      message.id,
    ]);
    expect(await ex.messageReleaseMany({ leases: [leaseOf(claimed)], dueAt: T0 })).toEqual([]);
    const stored = await ex.messageGet({ accountId, id: message.id });
    expect(stored?.dueAt).toBe(T0 + 10);
    expect(stored?.retried).toBe(0);
    const [again] = await ex.messageClaimDue({ now: T0 + 10, limit: 1, leaseUntil: T0 * 2 });
    expect(again?.id).toBe(message.id);
  });

  it('messageLeaseExtendMany pushes the lease expiry', async () => {
    const [message] = await insertDue(T0);
    const [claimed] = await ex.messageClaimDue({ now: T0, limit: 1, leaseUntil: T0 + LEASE_MS });
    if (!message || !claimed) throw new Error('nothing claimed');
    const extended = await ex.messageLeaseExtendMany({
      leases: [leaseOf(claimed)],
      leaseUntil: T0 + 3 * LEASE_MS,
    });
    expect(extended).toEqual([message.id]);
    expect((await ex.messageGet({ accountId, id: message.id }))?.dueAt).toBe(T0 + 3 * LEASE_MS);
    const early = await ex.messageClaimDue({ now: T0 + LEASE_MS, limit: 1, leaseUntil: T0 * 2 });
    expect(early).toEqual([]);
    // The token still holds after an extension.
    expect(await ex.messageDeleteLeasedMany({ leases: [leaseOf(claimed)] })).toEqual([message.id]);
  });

  it('fenced operations with no leases return no ids', async () => {
    expect(await ex.messageDeleteLeasedMany({ leases: [] })).toEqual([]);
    expect(await ex.messageRetryManyLeased({ retries: [] })).toEqual([]);
    expect(await ex.messageReleaseMany({ leases: [], dueAt: T0 })).toEqual([]);
    expect(await ex.messageLeaseExtendMany({ leases: [], leaseUntil: T0 })).toEqual([]);
  });

  it('the claim’s nextDueAt: earliest dueAt, strictly after `now`, leased rows at their expiry', async () => {
    expect(await nextDueAt(ex)).toBeUndefined();
    await insertDue(T0 + 500, T0 + 100, T0 + 100, T0 + 900);
    expect(await nextDueAt(ex)).toBe(T0 + 100);
    expect(await nextDueAt(ex, T0 + 99)).toBe(T0 + 100);
    expect(await nextDueAt(ex, T0 + 100)).toBe(T0 + 500);
    expect(await nextDueAt(ex, T0 + 900)).toBeUndefined();

    await ex.messageClaimDue({ now: T0 + 100, limit: 2, leaseUntil: T0 + 700 });
    expect(await nextDueAt(ex)).toBe(T0 + 500);
    expect(await nextDueAt(ex, T0 + 500)).toBe(T0 + 700);
  });

  it('bulk cancel deletes leased messages too; their completion then applies to nothing', async () => {
    const [message] = await insertDue(T0);
    const [claimed] = await ex.messageClaimDue({ now: T0, limit: 1, leaseUntil: T0 + LEASE_MS });
    if (!message || !claimed) throw new Error('nothing claimed');
    const cancelled = await ex.messageDeleteMany({ accountId, filter: {} });
    expect(cancelled.map((m) => m.id)).toEqual([message.id]);
    expect(await ex.messageDeleteLeasedMany({ leases: [leaseOf(claimed)] })).toEqual([]);
  });

  it('two concurrent claimers never get the same message', async () => {
    await insertDue(...Array.from({ length: 50 }, (_, i) => T0 + i));
    const claim = (): ReturnType<Executor['messageClaimDue']> =>
      ex.messageClaimDue({ now: T0 + 100, limit: 30, leaseUntil: T0 + LEASE_MS });
    const [one, two] = await Promise.all([claim(), claim()]);
    const ids = [...one, ...two].map((m) => m.id);
    expect(ids).toHaveLength(50);
    expect(new Set(ids).size).toBe(50);
  });
}
