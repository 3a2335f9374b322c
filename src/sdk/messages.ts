import { assertId, assertNonEmpty } from './http.js';
import type { HttpClient } from './http.js';
import type { Message, MessageFilter } from './types.js';

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
