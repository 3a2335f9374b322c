import { assertId, assertNonEmpty, withCursor } from './http.js';
import type { HttpClient } from './http.js';
import type { Message, MessageFilter, MessageListFilter, PageRequest } from './types.js';

/** `/v2/messages`: read and cancel messages that are not final yet. */
export class MessagesApi {
  constructor(private readonly http: HttpClient) {}

  /** A message while it is not final (afterwards only the events log has it). */
  async get(messageId: string): Promise<Message> {
    return this.http.request<Message>({
      method: 'GET',
      path: `/v2/messages/${assertId('messageId', messageId)}`,
    });
  }

  /**
   * One page of the messages that are not final yet, newest first (count ≤ 100; a Ferry
   * extension, `GET /v2/messages`); `cursor` is absent on the last page.
   */
  async list(
    req: PageRequest & { filter?: MessageListFilter } = {},
  ): Promise<{ messages: Message[]; cursor?: string }> {
    assertNonEmpty('messageIds', req.filter?.messageIds);
    const res = await this.http.request<{ cursor?: string; messages: Message[] }>({
      method: 'GET',
      path: '/v2/messages',
      query: { ...req.filter, cursor: req.cursor, count: req.count },
    });
    return withCursor(res.cursor, { messages: res.messages });
  }

  /** Cancels one message; `cancelled` is 1. */
  async cancel(messageId: string): Promise<{ cancelled: number }> {
    return this.http.request<{ cancelled: number }>({
      method: 'DELETE',
      path: `/v2/messages/${assertId('messageId', messageId)}`,
    });
  }

  /**
   * Cancels every message that matches all given filters; `cancelled` is how many. An empty
   * filter matches every message of the account; an empty `messageIds` array throws instead of
   * silently meaning "all".
   */
  async cancelMany(filter: MessageFilter): Promise<{ cancelled: number }> {
    assertNonEmpty('messageIds', filter.messageIds);
    return this.http.request<{ cancelled: number }>({
      method: 'DELETE',
      path: '/v2/messages',
      query: { ...filter },
    });
  }
}
