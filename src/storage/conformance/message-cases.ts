/** Messages: insert and get round trips. */
import { expect, it } from 'vitest';
import { newId, newMessageId } from '../../core/ids.js';
import { BINARY_BODY, makeFullMessage, makeMessage, plain } from './fixtures.js';
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

  it('messageInsertMany of no messages is a no-op', async () => {
    await ctx.executor().messageInsertMany({ messages: [] });
  });
}
