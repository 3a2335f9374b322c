/** Messages: insert and get round trips. */
import { expect, it } from 'vitest';
import { newId, newMessageId } from '../../core/ids.js';
import type { EventRecord, Message } from '../../core/types.js';
import type { Executor } from '../driver.js';
import { BINARY_BODY, makeEvent, makeFullMessage, makeMessage, plain } from './fixtures.js';
import type { SuiteContext } from './suite.js';

export function messageCases(ctx: SuiteContext): void {
  it('round-trips every field: binary body, nested spec JSON, all optional fields', async () => {
    const ex = ctx.executor();
    const message = makeFullMessage(newId('acct'));
    await ex.messageInsertMany({ messages: [message] });
    const got = await ex.messageGet({ accountId: message.accountId, id: message.id });
    expect(plain(got)).toEqual(plain(message));
    expect(Array.from(got?.body ?? [])).toEqual(Array.from(BINARY_BODY));
  });

  it('returns absent optional fields as absent, never null', async () => {
    const ex = ctx.executor();
    const message = makeMessage(newId('acct'), { body: new Uint8Array() });
    await ex.messageInsertMany({ messages: [message] });
    const got = await ex.messageGet({ accountId: message.accountId, id: message.id });
    expect(plain(got)).toEqual(plain(message));
    for (const key of ['topicName', 'endpointName', 'queueName', 'scheduleId'] as const) {
      expect(got?.[key]).toBeUndefined();
    }
    expect(got?.spec.labels).toBeUndefined();
    expect(got?.spec.flowControl).toBeUndefined();
    expect(got?.body.length).toBe(0);
  });

  it('messageGet is scoped by account and undefined for unknown ids', async () => {
    const ex = ctx.executor();
    const message = makeMessage(newId('acct'));
    await ex.messageInsertMany({ messages: [message] });
    expect(await ex.messageGet({ accountId: newId('acct'), id: message.id })).toBeUndefined();
    expect(
      await ex.messageGet({ accountId: message.accountId, id: newMessageId() }),
    ).toBeUndefined();
  });

  it('messageInsertMany inserts a batch, and a batch with a bad row inserts nothing', async () => {
    const ex = ctx.executor();
    const accountId = newId('acct');
    const batch = Array.from({ length: 5 }, (_, i) =>
      makeMessage(accountId, { createdAt: 1_000 + i }),
    );
    await ex.messageInsertMany({ messages: batch });
    for (const m of batch) {
      expect(plain(await ex.messageGet({ accountId, id: m.id }))).toEqual(plain(m));
    }

    const fresh = makeMessage(accountId);
    const duplicate = batch[0] ?? fresh;
    await expect(ex.messageInsertMany({ messages: [fresh, duplicate] })).rejects.toThrow();
    expect(await ex.messageGet({ accountId, id: fresh.id })).toBeUndefined();
  });

  it('messagePublishMany stores the messages and their CREATED events', async () => {
    const ex = ctx.executor();
    const accountId = newId('acct');
    const messages = [
      makeFullMessage(accountId, { createdAt: 1_000 }),
      makeMessage(accountId, { createdAt: 1_001 }),
      // Shared (stored once for the message and its event), so the one-statement path of
      // PostgreSQL is left for its transaction.
      makeMessage(accountId, { createdAt: 1_002, body: Buffer.alloc(10_000, 7) }),
      makeMessage(accountId, {
        createdAt: 1_003,
        spec: {
          method: 'POST',
          headers: {},
          flowControl: { key: 'k', parallelism: 1, periodSec: 1 },
        },
      }),
    ];
    await ex.messagePublishMany({ messages, events: messages.map((m) => makeEvent(m)) });
    await expectStored(ex, accountId, messages);
  });

  it('messagePublishMany stores nothing when one of its rows is bad', async () => {
    const ex = ctx.executor();
    const accountId = newId('acct');
    const messages = [makeMessage(accountId), makeMessage(accountId)];
    // A NOT NULL column left empty: the event insert fails after the message insert ran.
    const bad = { ...makeEvent(messages[1] as Message), url: undefined } as unknown as EventRecord;
    const events = [makeEvent(messages[0] as Message), bad];
    await expect(ex.messagePublishMany({ messages, events })).rejects.toThrow();
    for (const m of messages) expect(await ex.messageGet({ accountId, id: m.id })).toBeUndefined();
    expect((await ex.eventList({ accountId, filter: {}, count: 10 })).items).toEqual([]);
  });

  it('stores text the batch encoding must escape, and a lone surrogate as U+FFFD', async () => {
    const ex = ctx.executor();
    const accountId = newId('acct');
    const awkward = 'q "x" \\ {a,b} NULL\n\t\u0001 ✓ 😀 \\u0000';
    const message = makeFullMessage(accountId, {
      queueName: awkward,
      topicName: 'NULL',
      // Labels are stored joined by commas (the API allows none in a label).
      spec: { ...makeFullMessage(accountId).spec, labels: [awkward.replace(',', ';'), 'NULL'] },
      body: Uint8Array.from({ length: 256 }, (_, i) => i),
    });
    await ex.messagePublishMany({ messages: [message], events: [makeEvent(message)] });
    await expectStored(ex, accountId, [message]);

    // A JS string can hold a lone surrogate (a JSON body's "\ud800" parses to one); UTF-8
    // cannot. It is stored with U+FFFD in its place: one on PostgreSQL, one per byte of its
    // three-byte form on SQLite.
    const other = newId('acct');
    const lone = makeMessage(other, { endpointName: 'a\ud800b\udc00' });
    await ex.messagePublishMany({
      messages: [lone],
      events: [makeEvent(lone, { error: 'e\ud800' })],
    });
    const replaced = /^a\ufffd+b\ufffd+$/;
    expect((await ex.messageGet({ accountId: other, id: lone.id }))?.endpointName).toMatch(
      replaced,
    );
    const [event] = (await ex.eventList({ accountId: other, filter: {}, count: 10 })).items;
    expect(event?.endpointName).toMatch(replaced);
    expect(event?.error).toMatch(/^e\ufffd+$/);
  });

  it('messageInsertMany of no messages is a no-op', async () => {
    await ctx.executor().messageInsertMany({ messages: [] });
  });
}

/** Each message reads back whole, with its CREATED event (header and body) in the log. */
async function expectStored(ex: Executor, accountId: string, messages: Message[]): Promise<void> {
  for (const m of messages) {
    expect(plain(await ex.messageGet({ accountId, id: m.id }))).toEqual(plain(m));
  }
  const page = await ex.eventList({ accountId, filter: {}, count: 100 });
  const created = [...page.items].reverse().map((e) => ({ ...e, id: undefined }));
  expect(plain(created)).toEqual(plain(messages.map((m) => makeEvent(m))));
}
