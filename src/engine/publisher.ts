/**
 * Writes published messages with group commit: publishes that arrive while a commit is running
 * are written together in the next transaction, and each caller is answered only after its
 * messages are committed. On SQLite with `synchronous=FULL` one fsync then covers a whole batch,
 * which is where publish throughput comes from (not from weakening durability).
 */
import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/logger.js';
import type { EventRecord, Message } from '../core/types.js';
import type { Executor } from '../storage/driver.js';
import { eventOf } from './records.js';

/** One message to publish, with its deduplication key when it has one. */
export interface PublishItem {
  message: Message;
  /** Deduplication key (an explicit id, or a content hash); scoped to the account. */
  dedupKey?: string;
}

export interface PublishResult {
  messageId: string;
  /** True when an earlier message within the window holds the key; nothing was stored. */
  deduplicated: boolean;
}

export interface PublisherOptions {
  executor: Executor;
  clock: Clock;
  logger: Logger;
  /** Called after each commit that stored messages (wakes the engine, NOTIFYs other nodes). */
  onCommitted: () => void;
  /** Deduplication window (10 minutes by the API contract). */
  dedupWindowMs?: number;
  /** Most messages written in one transaction. */
  maxBatch?: number;
}

interface Pending {
  items: PublishItem[];
  resolve: (results: PublishResult[]) => void;
  reject: (error: unknown) => void;
}

export class Publisher {
  private readonly queue: Pending[] = [];
  private committing: Promise<void> | undefined;
  private readonly dedupWindowMs: number;
  private readonly maxBatch: number;

  constructor(private readonly options: PublisherOptions) {
    this.dedupWindowMs = options.dedupWindowMs ?? 10 * 60_000;
    this.maxBatch = options.maxBatch ?? 2_000;
  }

  /** Stores the items durably; resolves with one result per item, in order. */
  publish(items: PublishItem[]): Promise<PublishResult[]> {
    return new Promise((resolve, reject) => {
      this.queue.push({ items, resolve, reject });
      this.committing ??= this.commitLoop();
    });
  }

  /** Resolves when everything queued so far is committed (used by shutdown). */
  async drain(): Promise<void> {
    await this.committing;
  }

  private async commitLoop(): Promise<void> {
    while (this.queue.length > 0) {
      const batch: Pending[] = [];
      let size = 0;
      while (this.queue.length > 0 && (batch.length === 0 || size < this.maxBatch)) {
        const next = this.queue.shift() as Pending;
        batch.push(next);
        size += next.items.length;
      }
      try {
        const results = await this.commit(batch);
        batch.forEach((pending, i) => pending.resolve(results[i] as PublishResult[]));
      } catch (error) {
        this.options.logger.error({ err: error, count: size }, 'committing published messages failed');
        for (const pending of batch) pending.reject(error);
      }
    }
    this.committing = undefined;
  }

  private async commit(batch: Pending[]): Promise<PublishResult[][]> {
    const now = this.options.clock.now();
    const results = await this.options.executor.transaction(async (tx) => {
      const messages: Message[] = [];
      const events: EventRecord[] = [];
      const perRequest: PublishResult[][] = [];
      for (const pending of batch) {
        const results: PublishResult[] = [];
        for (const { message, dedupKey } of pending.items) {
          if (dedupKey !== undefined) {
            const claim = await tx.dedupClaim({
              accountId: message.accountId,
              key: dedupKey,
              messageId: message.id,
              now,
              expiresAt: now + this.dedupWindowMs,
            });
            if (claim.duplicate) {
              results.push({ messageId: claim.messageId, deduplicated: true });
              continue;
            }
          }
          messages.push(message);
          events.push(eventOf(message, 'CREATED', message.createdAt));
          results.push({ messageId: message.id, deduplicated: false });
        }
        perRequest.push(results);
      }
      if (messages.length > 0) {
        await tx.messageInsertMany({ messages });
        await tx.eventInsertMany({ events });
      }
      return { perRequest, stored: messages.length };
    });
    if (results.stored > 0) this.options.onCommitted();
    return results.perRequest;
  }
}
