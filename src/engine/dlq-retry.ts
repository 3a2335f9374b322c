/**
 * Retrying DLQ entries: each becomes a new message (new id, retries from zero) and leaves the
 * DLQ in the same transaction, so a crash can neither lose it nor leave it in both places.
 */
import type { Clock } from '../core/clock.js';
import { newMessageId } from '../core/ids.js';
import type { DlqEntry, Message } from '../core/types.js';
import type { Executor } from '../storage/driver.js';
import { eventOf } from './records.js';

/** Changes a retry applies to the stored message (from publish headers on the retry call). */
export type RetryOverride = (stored: Message, now: number) => Message;

export async function retryDlqEntries(p: {
  executor: Executor;
  clock: Clock;
  accountId: string;
  entries: DlqEntry[];
  override: RetryOverride;
}): Promise<Message[]> {
  const now = p.clock.now();
  const messages = p.entries.map((entry) => {
    const fresh: Message = {
      ...entry.message,
      id: newMessageId(now),
      retried: 0,
      createdAt: now,
      notBefore: now,
      dueAt: now,
    };
    const message = p.override(fresh, now);
    return { ...message, dueAt: Math.max(message.notBefore, now) };
  });
  if (messages.length === 0) return [];
  await p.executor.transaction(async (tx) => {
    await tx.messageInsertMany({ messages });
    await tx.eventInsertMany({ events: messages.map((m) => eventOf(m, 'CREATED', now)) });
    await tx.dlqDeleteMany({ accountId: p.accountId, dlqIds: p.entries.map((e) => e.dlqId) });
  });
  return messages;
}
