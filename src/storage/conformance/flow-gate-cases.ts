/**
 * Flow-control keys and queues: parked waiting messages, admission per gate (parallelism, rate,
 * order), slot holders through retries and callbacks, gate changes. Admission and claims have no
 * account scope, so each case starts from an empty messages table (`clearMessages`).
 */
import { beforeEach, expect, it } from 'vitest';
import type { Message } from '../../core/types.js';
import type { Executor, MessageState } from '../driver.js';
import {
  clearMessages,
  leaseOf,
  makeAccount,
  makeEvent,
  makeMessage,
  nextDueAt,
  T0,
} from './fixtures.js';
import type { SuiteContext } from './suite.js';

const LEASE = 60_000;

export function flowGateCases(ctx: SuiteContext): void {
  let ex: Executor;
  let accountId: string;
  beforeEach(async () => {
    ex = ctx.executor();
    await clearMessages(ex);
    const account = makeAccount();
    accountId = account.id;
    await ex.accountInsert({ account });
  });

  const keyed = (
    key: string,
    limits: { parallelism?: number; rate?: number; periodSec?: number },
    overrides: Partial<Message> = {},
  ): Message =>
    makeMessage(accountId, {
      ...overrides,
      spec: { method: 'POST', headers: {}, flowControl: { key, periodSec: 1, ...limits } },
    });
  const claim = (now: number, limit = 100) =>
    ex.transaction(async (tx) => {
      await tx.flowGateAdmit({ now, limit: 100 });
      return tx.messageClaimDue({ now, limit, leaseUntil: now + LEASE });
    });
  const key = (name: string) => ({ accountId, kind: 'key' as const, name });

  it('a key admits at most `parallelism` in publish order; a finished attempt frees a slot', async () => {
    const messages = Array.from({ length: 5 }, () => keyed('k', { parallelism: 2 }));
    await ex.messageInsertMany({ messages });
    // The key had free slots: the first two started as they were published, without an
    // admission round; the rest wait.
    const first = await ex.messageClaimDue({ now: T0, limit: 10, leaseUntil: T0 + LEASE });
    expect(first.map((m) => m.id).sort()).toEqual([messages[0]?.id, messages[1]?.id].sort());
    expect(await claim(T0)).toEqual([]);
    const gate = await ex.flowGateGet(key('k'));
    expect(gate).toMatchObject({ parallelism: 2, waitListSize: 3, parallelismCount: 2 });
    expect(await nextDueAt(ex, T0)).toBe(T0 + LEASE); // the leases, not the key
    const [done, other] = first;
    if (!done || !other) throw new Error('nothing claimed');
    await ex.messageDeleteLeasedMany({ leases: [leaseOf(done)] });
    expect(await nextDueAt(ex, T0)).toBeLessThanOrEqual(T0); // ready to admit
    expect((await claim(T0)).map((m) => m.id)).toEqual([messages[2]?.id]);
    // A waiting message reads back with its own due time, not the parked one.
    expect((await ex.messageGet({ accountId, id: messages[4]?.id ?? '' }))?.dueAt).toBe(T0);
    // A slot is free again, but messages wait ahead: a new one does not overtake them.
    await ex.messageDeleteLeasedMany({ leases: [leaseOf(other)] });
    const late = keyed('k', { parallelism: 2 });
    await ex.messageInsertMany({ messages: [late] });
    expect((await claim(T0)).map((m) => m.id)).toEqual([messages[3]?.id]);
    expect((await ex.flowGateGet(key('k')))?.waitListSize).toBe(2);
  });

  it('messageView and messageList tell where each message stands at `now`', async () => {
    const holder = keyed('k', { parallelism: 1 });
    const waiting = keyed('k', { parallelism: 1 });
    const delayed = makeMessage(accountId, { dueAt: T0 + 5_000, notBefore: T0 + 5_000 });
    await ex.messageInsertMany({ messages: [holder, waiting, delayed] });
    const claimed = await ex.messageClaimDue({ now: T0, limit: 10, leaseUntil: T0 + LEASE });
    expect(claimed.map((m) => m.id)).toEqual([holder.id]);
    const due = makeMessage(accountId);
    await ex.messageInsertMany({ messages: [due] });

    const view = async (m: Message, now = T0 + 1) => {
      const found = await ex.messageView({ accountId, id: m.id, now });
      return found && { state: found.state, dueAt: found.message.dueAt };
    };
    expect(await view(holder)).toEqual({ state: 'active', dueAt: T0 + LEASE });
    expect(await view(waiting)).toEqual({ state: 'waiting', dueAt: T0 });
    expect(await view(delayed)).toEqual({ state: 'delayed', dueAt: T0 + 5_000 });
    expect(await view(due)).toEqual({ state: 'due', dueAt: T0 });
    // Past its lease, the holder is due again (the next claim takes it), and the delayed one due.
    expect((await view(holder, T0 + LEASE + 1))?.state).toBe('due');
    expect((await view(delayed, T0 + 5_000))?.state).toBe('due');
    // Another account's message is not found.
    expect(await ex.messageView({ accountId: 'acc_other', id: holder.id, now: T0 })).toBe(
      undefined,
    );

    const listed = await ex.messageList({ accountId, filter: {}, count: 10, now: T0 + 1 });
    const states = Object.fromEntries(listed.items.map((l) => [l.message.id, l.state]));
    expect(states).toEqual({
      [holder.id]: 'active',
      [waiting.id]: 'waiting',
      [delayed.id]: 'delayed',
      [due.id]: 'due',
    });
    // Without a time, a list tells no state.
    const plain = await ex.messageList({ accountId, filter: {}, count: 10 });
    expect(plain.items.map((l) => l.state)).toEqual([undefined, undefined, undefined, undefined]);

    // Listed by state: the same states, chosen in the query.
    const only = async (states: MessageState[], now = T0 + 1) => {
      const page = await ex.messageList({ accountId, filter: {}, count: 10, now, states });
      return page.items.map((l) => l.message.id).sort();
    };
    expect(await only(['active'])).toEqual([holder.id]);
    expect(await only(['waiting'])).toEqual([waiting.id]);
    expect(await only(['delayed'])).toEqual([delayed.id]);
    expect(await only(['due'])).toEqual([due.id]);
    expect(await only(['due', 'active'])).toEqual([holder.id, due.id].sort());
    expect(await only([])).toEqual([]);
    // Past the lease and the delay, all three are due.
    expect(await only(['due'], T0 + LEASE + 1)).toEqual([holder.id, delayed.id, due.id].sort());
    expect(await only(['active', 'delayed'], T0 + LEASE + 1)).toEqual([]);
  });

  it('messageFinishMany of a holder frees its slot, as messageDeleteLeasedMany does', async () => {
    const messages = [keyed('k', { parallelism: 1 }), keyed('k', { parallelism: 1 })];
    await ex.messageInsertMany({ messages });
    const [holder] = await ex.messageClaimDue({ now: T0, limit: 10, leaseUntil: T0 + LEASE });
    if (!holder) throw new Error('nothing claimed');
    expect(holder.id).toBe(messages[0]?.id);
    expect(await claim(T0)).toEqual([]);
    const events = [makeEvent(holder, { state: 'DELIVERED', time: T0 + 1 })];
    expect(
      await ex.messageFinishMany({ events: [], finished: [{ lease: leaseOf(holder), events }] }),
    ).toEqual([holder.id]);
    expect((await claim(T0)).map((m) => m.id)).toEqual([messages[1]?.id]);
    const page = await ex.eventList({ accountId, filter: {}, count: 10 });
    expect(page.items.map((e) => [e.messageId, e.state])).toEqual([[holder.id, 'DELIVERED']]);
  });

  it('the engine’s claim tells when a gate is ready, so that admission runs', async () => {
    const limited = (now: number) =>
      ex.messageClaimDueLimited({ now, limit: 10, leaseUntil: now + LEASE, maxInFlightByPlan: {} });
    const messages = [keyed('k', { parallelism: 1 }), keyed('k', { parallelism: 1 })];
    await ex.messageInsertMany({ messages });
    await ex.flowGateAdmit({ now: T0, limit: 100 });
    const first = await limited(T0);
    expect(first.messages.map((m) => m.id)).toEqual([messages[0]?.id]);
    expect(first.gatesReady).toBe(false);
    const [holder] = first.messages;
    if (!holder) throw new Error('nothing claimed');
    // Its slot is free and a message waits: the gate is ready, nothing is due yet.
    await ex.messageDeleteLeasedMany({ leases: [leaseOf(holder)] });
    expect(await limited(T0)).toMatchObject({ messages: [], gatesReady: true });
    expect((await ex.flowGateAdmit({ now: T0, limit: 100 })).admitted).toBe(1);
    expect(await limited(T0)).toMatchObject({
      messages: [{ id: messages[1]?.id }],
      gatesReady: false,
    });
  });

  it('a key starts at most `rate` attempts per period, retries included', async () => {
    const messages = Array.from({ length: 5 }, () => keyed('r', { rate: 2, periodSec: 10 }));
    await ex.messageInsertMany({ messages });
    const first = await claim(T0);
    expect(first).toHaveLength(2);
    expect(await claim(T0 + 9_999)).toEqual([]);
    expect(await nextDueAt(ex, T0 + 9_999)).toBe(T0 + 10_000);
    expect(await ex.flowGateGet(key('r'))).toMatchObject({
      rateCount: 2,
      ratePeriodStart: T0,
      waitListSize: 3,
    });
    // A retry waits again and counts again.
    const [retried] = first;
    if (!retried) throw new Error('nothing claimed');
    await ex.messageRetryManyLeased({
      retries: [{ ...leaseOf(retried), dueAt: T0 + 10_000, retried: 1 }],
    });
    expect((await ex.flowGateGet(key('r')))?.waitListSize).toBe(4);
    // The wait list is ordered by due time, then publish order: the retry (due at T0 + 10 s)
    // comes after the messages due since T0.
    const second = await claim(T0 + 10_000);
    expect(second.map((m) => m.id).sort()).toEqual([messages[2]?.id, messages[3]?.id].sort());
    const third = await claim(T0 + 20_000);
    expect(third.map((m) => m.id).sort()).toEqual([messages[4]?.id, retried.id].sort());
    expect(third.find((m) => m.id === retried.id)?.retried).toBe(1);
  });

  it('each publish updates the limits unless pinned; pause, resume and resetRate', async () => {
    // Both start as they are published: the second finds 1 holder of 3 and counts toward rate.
    await ex.messageInsertMany({ messages: [keyed('p', { parallelism: 1 })] });
    await ex.messageInsertMany({ messages: [keyed('p', { parallelism: 3, rate: 5 })] });
    expect(await ex.flowGateGet(key('p'))).toMatchObject({
      parallelism: 3,
      rate: 5,
      parallelismCount: 2,
      rateCount: 1,
    });
    await ex.flowGateUpdate({ ...key('p'), now: T0, parallelism: 1, pinnedParallelism: true });
    await ex.messageInsertMany({ messages: [keyed('p', { parallelism: 4, rate: 7 })] });
    expect(await ex.flowGateGet(key('p'))).toMatchObject({
      parallelism: 1,
      rate: 7,
      pinnedParallelism: true,
      pinnedRate: false,
      waitListSize: 1,
    });
    await ex.flowGateUpdate({ ...key('p'), now: T0, paused: true });
    // The two that started before the pause are delivered; their slots are not reused.
    const started = await claim(T0);
    expect(started).toHaveLength(2);
    await ex.messageDeleteLeasedMany({ leases: started.map(leaseOf) });
    expect(await claim(T0)).toEqual([]);
    expect((await ex.flowGateGet(key('p')))?.waitListSize).toBe(1);
    await ex.flowGateUpdate({ ...key('p'), now: T0, paused: false });
    expect(await claim(T0)).toHaveLength(1);
    expect((await ex.flowGateGet(key('p')))?.rateCount).toBe(2);
    const reset = await ex.flowGateUpdate({ ...key('p'), now: T0 + 5, resetRate: true });
    expect(reset).toMatchObject({ rateCount: 0, ratePeriodStart: T0 + 5, parallelismCount: 1 });
    expect(await ex.flowGateUpdate({ ...key('nope'), now: T0, paused: true })).toBeUndefined();
  });

  it('a queue holds its slot through retries and passes it to the callbacks', async () => {
    const q = (overrides: Partial<Message> = {}) =>
      makeMessage(accountId, { queueName: 'fifo', ...overrides });
    const [a, b] = [q(), q()];
    if (!a || !b) throw new Error('unreachable');
    await ex.messageInsertMany({ messages: [a, b] });
    const [claimedA] = await claim(T0);
    expect(claimedA?.id).toBe(a.id);
    await ex.messageRetryManyLeased({
      retries: [{ ...leaseOf(claimedA as never), dueAt: T0 + 100, retried: 1 }],
    });
    expect(await claim(T0 + 50)).toEqual([]);
    const [again] = await claim(T0 + 100);
    expect(again?.id).toBe(a.id); // b still waits
    // The attempt ends with a callback message: it takes the slot in the same transaction.
    const callback = makeMessage(accountId, {
      createdAt: T0 + 100,
      spec: { method: 'POST', headers: {}, holdsQueue: 'fifo' },
    });
    await ex.transaction(async (tx) => {
      await tx.messageDeleteLeasedMany({ leases: [leaseOf(again as never)] });
      await tx.messageInsertMany({ messages: [callback] });
    });
    const [claimedCallback] = await claim(T0 + 100);
    expect(claimedCallback?.id).toBe(callback.id);
    expect(await claim(T0 + 100)).toEqual([]);
    await ex.messageDeleteLeasedMany({ leases: [leaseOf(claimedCallback as never)] });
    expect((await claim(T0 + 100)).map((m) => m.id)).toEqual([b.id]);
    expect(await ex.flowGateGet({ accountId, kind: 'queue', name: 'fifo' })).toMatchObject({
      parallelism: 1,
      waitListSize: 0,
      parallelismCount: 1,
    });
    // An enqueue changes nothing of the queue's settings, so not its updatedAt.
    await ex.messageInsertMany({ messages: [q({ createdAt: T0 + 200, dueAt: T0 + 200 })] });
    expect(await ex.flowGateGet({ accountId, kind: 'queue', name: 'fifo' })).toMatchObject({
      createdAt: T0,
      updatedAt: T0,
      waitListSize: 1,
    });
  });

  it('one admission round serves many gates, each by its own limits and holders', async () => {
    await ex.queueUpsert({ accountId, name: 'q2', parallelism: 2, now: T0, maxQueues: 10 });
    // Due 1 ms after they are published, so every one waits for an admission round.
    const later = { dueAt: T0 + 1, notBefore: T0 + 1 };
    await ex.messageInsertMany({
      messages: [
        ...Array.from({ length: 4 }, () => keyed('p1', { parallelism: 1 }, later)),
        ...Array.from({ length: 4 }, () => keyed('p3', { parallelism: 3 }, later)),
        ...Array.from({ length: 4 }, () => keyed('r2', { rate: 2, periodSec: 10 }, later)),
        ...Array.from({ length: 4 }, () => keyed('off', { parallelism: 4 }, later)),
        ...Array.from({ length: 4 }, () => makeMessage(accountId, { queueName: 'q2', ...later })),
      ],
    });
    await ex.flowGateUpdate({ ...key('off'), paused: true, now: T0 });
    const { admitted, gates } = await ex.flowGateAdmit({ now: T0 + 1, limit: 100 });
    expect({ admitted, gates }).toEqual({ admitted: 1 + 3 + 2 + 2, gates: 5 });
    const claimed = await ex.messageClaimDue({ now: T0 + 1, limit: 100, leaseUntil: T0 + LEASE });
    const counts = async () =>
      Object.fromEntries(
        await Promise.all(
          [
            key('p1'),
            key('p3'),
            key('r2'),
            key('off'),
            { accountId, kind: 'queue' as const, name: 'q2' },
          ].map(async (k) => {
            const g = await ex.flowGateGet(k);
            return [k.name, [g?.parallelismCount, g?.waitListSize]] as const;
          }),
        ),
      );
    expect(await counts()).toEqual({
      p1: [1, 3],
      p3: [3, 1],
      r2: [2, 2],
      off: [0, 4],
      q2: [2, 2],
    });
    // Every gate is full, out of rate or paused: nothing more starts until something changes.
    expect(await ex.flowGateAdmit({ now: T0 + 2, limit: 100 })).toEqual({ admitted: 0, gates: 0 });
    // One holder of p3 and of q2 ends; p1 and `off` are made ready by a change (their holders
    // stay): each gate admits by its own holders.
    const ofGate = (name: string) =>
      claimed.find((m) => m.spec.flowControl?.key === name || m.queueName === name);
    await ex.messageDeleteLeasedMany({
      leases: [ofGate('p3'), ofGate('q2')].map((m) => leaseOf(m as never)),
    });
    await ex.flowGateUpdate({ ...key('p1'), paused: false, now: T0 + 3 });
    await ex.flowGateUpdate({ ...key('off'), paused: false, now: T0 + 3 });
    expect(await ex.flowGateAdmit({ now: T0 + 3, limit: 100 })).toEqual({
      admitted: 0 + 1 + 4 + 1,
      gates: 4,
    });
    expect(await counts()).toEqual({
      p1: [1, 3],
      p3: [3, 0],
      r2: [2, 2],
      off: [4, 0],
      q2: [2, 1],
    });
  });

  it('an admission undone by a rollback (transaction or savepoint) is done again', async () => {
    // Due 1 ms after they are published, so they wait for an admission round.
    const later = { dueAt: T0 + 1, notBefore: T0 + 1 };
    const [a, b] = [
      keyed('rb', { parallelism: 1 }, later),
      keyed('rb2', { parallelism: 1 }, later),
    ];
    await ex.messageInsertMany({ messages: [a, b] });
    const admitThenFail = (tx: Executor) =>
      tx.transaction(async (inner) => {
        expect((await inner.flowGateAdmit({ now: T0 + 1, limit: 100 })).admitted).toBe(2);
        throw new Error('abort');
      });
    await expect(admitThenFail(ex)).rejects.toThrow('abort');
    const again = await ex.transaction(async (tx) => {
      await expect(admitThenFail(tx)).rejects.toThrow('abort');
      const { admitted } = await tx.flowGateAdmit({ now: T0 + 1, limit: 100 });
      const claimed = await tx.messageClaimDue({
        now: T0 + 1,
        limit: 10,
        leaseUntil: T0 + LEASE,
      });
      return { admitted, ids: claimed.map((m) => m.id).sort() };
    });
    expect(again).toEqual({ admitted: 2, ids: [a.id, b.id].sort() });
  });

  it('a delayed message waits for its time without blocking later ones of its key', async () => {
    const late = keyed('d', { parallelism: 5 }, { dueAt: T0 + 1_000, notBefore: T0 + 1_000 });
    const now = keyed('d', { parallelism: 5 });
    await ex.messageInsertMany({ messages: [late, now] });
    expect((await claim(T0)).map((m) => m.id)).toEqual([now.id]);
    expect(await nextDueAt(ex, T0)).toBe(T0 + 1_000);
    expect((await claim(T0 + 1_000)).map((m) => m.id)).toEqual([late.id]);
  });

  it('a long wait list is not read by claims of other messages', async () => {
    const waiting = Array.from({ length: 2_000 }, () => keyed('big', { parallelism: 1 }));
    await ex.messageInsertMany({ messages: waiting });
    expect(await claim(T0, 1)).toHaveLength(1);
    const other = makeMessage(accountId);
    await ex.messageInsertMany({ messages: [other] });
    expect((await claim(T0)).map((m) => m.id)).toEqual([other.id]);
    expect((await ex.flowGateGet(key('big')))?.waitListSize).toBe(1_999);
    expect(await ex.messageCountInFlight({ accountId, now: T0 })).toBe(2);
    // Cancelled here: the next case's clearMessages would admit them one round at a time.
    expect(await ex.messageDeleteMany({ accountId, filter: {} })).toHaveLength(2_001);
  });

  it('cancelling a holder frees its slot; lists, search, queue upsert limit, delete', async () => {
    const [a, b] = [keyed('c-1', { parallelism: 1 }), keyed('c-1', { parallelism: 1 })];
    if (!a || !b) throw new Error('unreachable');
    await ex.messageInsertMany({ messages: [a, b, keyed('c_2', { rate: 1 })] });
    expect((await claim(T0)).map((m) => m.id).sort()).toHaveLength(2);
    await ex.messageDeleteMany({ accountId, filter: { messageIds: [a.id] } });
    expect((await claim(T0)).map((m) => m.id)).toEqual([b.id]);
    expect((await ex.flowGateList({ accountId, kind: 'key' })).map((g) => g.name)).toEqual([
      'c-1',
      'c_2',
    ]);
    expect(
      (await ex.flowGateList({ accountId, kind: 'key', search: '_' })).map((g) => g.name),
    ).toEqual(['c_2']);

    const upsert = (name: string, extra: { parallelism?: number; paused?: boolean } = {}) =>
      ex.queueUpsert({ accountId, name, now: T0, maxQueues: 2, ...extra });
    expect(await upsert('q1')).toBe('created');
    expect(await upsert('q2', { parallelism: 3 })).toBe('created');
    expect(await upsert('q3')).toBe('limit');
    expect(await upsert('q1', { paused: true })).toBe('updated');
    expect((await ex.flowGateList({ accountId, kind: 'queue' })).map((g) => g.name)).toEqual([
      'q1',
      'q2',
    ]);
    expect(await ex.flowGateGet({ accountId, kind: 'queue', name: 'q1' })).toMatchObject({
      parallelism: 1,
      paused: true,
    });
    expect(await ex.flowGateDelete({ accountId, kind: 'queue', name: 'q1' })).toBe(true);
    expect(await ex.flowGateDelete({ accountId, kind: 'queue', name: 'q1' })).toBe(false);
    expect(await upsert('q3')).toBe('created');
  });

  it('creates an account’s last allowed queue once when creations race for it', async () => {
    const upsert = (name: string) => ex.queueUpsert({ accountId, name, now: T0, maxQueues: 3 });
    expect(await upsert('q1')).toBe('created');
    expect(await upsert('q2')).toBe('created');
    // Concurrent calls: on PostgreSQL each runs on its own pool connection.
    const results = await Promise.all(Array.from({ length: 8 }, (_, i) => upsert(`q-new-${i}`)));
    expect(results.filter((r) => r === 'created')).toHaveLength(1);
    expect(results.filter((r) => r === 'limit')).toHaveLength(7);
    expect(await ex.flowGateList({ accountId, kind: 'queue' })).toHaveLength(3);
  });
}
