/**
 * Bodies stored once (migration 011): the rows of one publish share its body, lists read its
 * head, single items read it whole, and it is deleted once nothing references it.
 */
import { expect, it } from 'vitest';
import { newId } from '../../core/ids.js';
import type { Executor } from '../driver.js';
import { FAR_FUTURE, leaseOf, makeDlqEntry, makeEvent, makeMessage, T0 } from './fixtures.js';
import type { SuiteContext } from './suite.js';

/** `size` bytes that differ at every offset modulo 251, so a wrong slice shows. */
const bodyOf = (size: number): Buffer =>
  Buffer.from(Array.from({ length: size }, (_, i) => (i * 13 + 5) % 251));

/** Deletes every unreferenced body (other cases' too), so counts start from what is in use. */
async function sweep(ex: Executor): Promise<number> {
  let total = 0;
  for (;;) {
    const n = await ex.bodyDeleteUnreferenced({ limit: 100 });
    total += n;
    if (n < 100) return total;
  }
}

export function sharedBodyCases(ctx: SuiteContext): void {
  it('a fan-out of 200 messages with their CREATED events and DLQ entries stores its body once', async () => {
    const ex = ctx.executor();
    await sweep(ex);
    const before = await ex.bodyUsage();
    const accountId = newId('acct');
    const body = bodyOf(100_000);
    const messages = Array.from({ length: 200 }, (_, i) =>
      makeMessage(accountId, { body, url: `https://example.com/e${i}`, createdAt: T0 + i }),
    );
    await ex.transaction(async (tx) => {
      await Promise.all([
        tx.messageInsertMany({ messages }),
        tx.eventInsertMany({ events: messages.map((m) => makeEvent(m)) }),
      ]);
    });
    await ex.dlqInsertMany({ entries: messages.slice(0, 3).map((m) => makeDlqEntry(m)) });
    const after = await ex.bodyUsage();
    expect(after.count - before.count).toBe(1);
    expect(after.bytes - before.bytes).toBe(100_000);

    // Single items read the whole body; lists read the head (the default cut) or more.
    const one = await ex.messageGet({ accountId, id: messages[7]?.id ?? '' });
    expect(Buffer.from(one?.body ?? []).equals(body)).toBe(true);
    const head = await ex.eventList({ accountId, filter: {}, count: 2, bodyCut: 65_536 });
    expect(Buffer.from(head.items[0]?.body ?? []).equals(body.subarray(0, 65_536))).toBe(true);
    expect(head.items[0]?.bodySize).toBe(100_000);
    const past = await ex.eventList({ accountId, filter: {}, count: 1, bodyCut: 70_000 });
    expect(Buffer.from(past.items[0]?.body ?? []).equals(body.subarray(0, 70_000))).toBe(true);
    const short = await ex.dlqList({ accountId, filter: {}, count: 1, bodyCut: 10 });
    expect([...(short.items[0]?.message.body ?? [])]).toEqual([...body.subarray(0, 10)]);
    expect(short.items[0]?.bodySize).toBe(100_000);
    const whole = await ex.eventList({ accountId, filter: {}, count: 1 });
    expect(Buffer.from(whole.items[0]?.body ?? []).equals(body)).toBe(true);
    expect(whole.items[0]?.bodySize).toBeUndefined();
    // The messages list too (it read the shared bodies as empty until 2026-12-07).
    const listed = await ex.messageList({ accountId, filter: {}, count: 2, bodyCut: 10 });
    expect([...(listed.items[1]?.message.body ?? [])]).toEqual([...body.subarray(0, 10)]);
    expect(listed.items.map((l) => l.bodySize)).toEqual([100_000, 100_000]);
    const listedWhole = await ex.messageList({ accountId, filter: {}, count: 1 });
    expect(Buffer.from(listedWhole.items[0]?.message.body ?? []).equals(body)).toBe(true);
    expect(listedWhole.items[0]?.bodySize).toBeUndefined();
  });

  it('a batch stores each entry’s body apart, and bodies up to 4 KiB stay inline', async () => {
    const ex = ctx.executor();
    await sweep(ex);
    const before = await ex.bodyUsage();
    const accountId = newId('acct');
    // Equal bytes in two arrays: two publishes, two bodies (contents are never compared).
    const a = makeMessage(accountId, { body: bodyOf(5_000) });
    const b = makeMessage(accountId, { body: bodyOf(5_000) });
    const small = makeMessage(accountId, { body: bodyOf(4_096) });
    await ex.messageInsertMany({ messages: [a, b, small] });
    const after = await ex.bodyUsage();
    expect(after.count - before.count).toBe(2);
    expect(after.bytes - before.bytes).toBe(10_000);
    const read = await ex.messageGet({ accountId, id: small.id });
    expect(Buffer.from(read?.body ?? []).equals(bodyOf(4_096))).toBe(true);
  });

  it('a body is freed once its messages, events and DLQ entries are all gone', async () => {
    const ex = ctx.executor();
    const accountId = newId('acct');
    const body = bodyOf(20_000);
    const messages = [0, 1].map((i) =>
      makeMessage(accountId, { body, createdAt: T0 - 10_000 + i, dueAt: T0 - 10_000 + i }),
    );
    await ex.messageInsertMany({ messages });
    await ex.eventInsertMany({ events: messages.map((m) => makeEvent(m)) });
    await sweep(ex);
    const held = await ex.bodyUsage();

    // An outcome: the claimed message is deleted and its DLQ entry, written from the message as
    // read back, takes its body: referenced again, not copied.
    const claimed = (
      await ex.messageClaimDue({ now: FAR_FUTURE, limit: 1_000, leaseUntil: FAR_FUTURE })
    ).filter((m) => m.accountId === accountId);
    expect(claimed).toHaveLength(2);
    expect(Buffer.from(claimed[0]?.body ?? []).equals(body)).toBe(true);
    const [first] = claimed;
    if (!first) throw new Error('nothing claimed');
    const entry = makeDlqEntry(first);
    await ex.transaction(async (tx) => {
      await tx.messageDeleteLeasedMany({ leases: claimed.map(leaseOf) });
      await tx.dlqInsertMany({ entries: [entry] });
    });
    expect(await sweep(ex)).toBe(0);
    expect(await ex.bodyUsage()).toEqual(held);

    // Event retention: the CREATED events go; the DLQ entry still holds the body. (Retention
    // deletes other cases' old events too, and the sweep may free their bodies: not counted.)
    await ex.eventDeleteBefore({ before: T0, limit: 100_000 });
    await sweep(ex);
    const got = await ex.dlqGet({ accountId, dlqId: entry.dlqId });
    expect(Buffer.from(got?.message.body ?? []).equals(body)).toBe(true);
    const kept = await ex.bodyUsage();

    // The DLQ entry deleted: nothing references the body, the pruner's sweep deletes it.
    expect(await ex.dlqDeleteMany({ accountId, dlqIds: [entry.dlqId] })).toBe(1);
    expect(await sweep(ex)).toBe(1);
    const freed = await ex.bodyUsage();
    expect(kept.count - freed.count).toBe(1);
    expect(kept.bytes - freed.bytes).toBe(20_000);
  });

  it('bulk cancel returns whole bodies, and the cancelled messages’ body is then freed', async () => {
    const ex = ctx.executor();
    const accountId = newId('acct');
    const body = bodyOf(70_000);
    const messages = [0, 1, 2].map((i) => makeMessage(accountId, { body, createdAt: T0 + i }));
    await ex.messageInsertMany({ messages });
    await sweep(ex);
    const held = await ex.bodyUsage();
    const cancelled = await ex.messageDeleteMany({ accountId, filter: {} });
    expect(cancelled).toHaveLength(3);
    for (const m of cancelled) expect(Buffer.from(m.body).equals(body)).toBe(true);
    expect(await sweep(ex)).toBe(1);
    expect(held.bytes - (await ex.bodyUsage()).bytes).toBe(70_000);
  });
}
