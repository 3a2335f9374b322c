import { assertId, assertNonEmpty, bulkDelete, withCursor } from './http.js';
import type { HttpClient, QueryValue } from './http.js';
import type { DlqFilter, DlqMessage, DlqPage, DlqSelection, PageRequest } from './types.js';

/** Query of a bulk DLQ call: the ids, or the filter plus its page. */
function selectionQuery(sel: DlqSelection): Record<string, QueryValue> {
  if ('dlqIds' in sel) {
    assertNonEmpty('dlqIds', sel.dlqIds);
    return { dlqIds: sel.dlqIds };
  }
  return { ...sel.filter, cursor: sel.cursor, count: sel.count };
}

/** `/v2/dlq`: messages whose retries ran out, kept for inspection and re-delivery. */
export class DlqApi {
  constructor(private readonly http: HttpClient) {}

  /** One page of DLQ entries (count ≤ 100); `cursor` is absent on the last page. */
  async list(req: PageRequest & { filter?: DlqFilter } = {}): Promise<DlqPage> {
    const res = await this.http.request<{ cursor?: string; messages: DlqMessage[] }>({
      method: 'GET',
      path: '/v2/dlq',
      query: { ...req.filter, cursor: req.cursor, count: req.count },
    });
    return withCursor(res.cursor, { messages: res.messages });
  }

  async get(dlqId: string): Promise<DlqMessage> {
    return this.http.request<DlqMessage>({
      method: 'GET',
      path: `/v2/dlq/${assertId('dlqId', dlqId)}`,
    });
  }

  /** Removes one entry; rejects with a 404 `FerryApiError` when it does not exist. */
  async delete(dlqId: string): Promise<void> {
    await this.http.request<unknown>({
      method: 'DELETE',
      path: `/v2/dlq/${assertId('dlqId', dlqId)}`,
    });
  }

  /**
   * Removes the listed entries, or one page of those matching the filter (`{filter: {}}` matches
   * all); call again with the returned `cursor` until it is absent.
   */
  async deleteMany(sel: DlqSelection): Promise<{ deleted: number; cursor?: string }> {
    return bulkDelete(this.http, '/v2/dlq', selectionQuery(sel));
  }

  /**
   * Publishes the entry again as a new message. `overrides.headers` are publish headers sent as
   * given (e.g. `{'Svc-Retries': '5'}`); they replace the stored configuration.
   */
  async retry(
    dlqId: string,
    overrides?: { headers?: Record<string, string> },
  ): Promise<{ messageId: string }> {
    return this.http.request<{ messageId: string }>({
      method: 'POST',
      path: `/v2/dlq/retry/${assertId('dlqId', dlqId)}`,
      headers: overrides?.headers,
    });
  }

  /** Retries the listed entries, or one page of those matching the filter. */
  async retryMany(
    sel: DlqSelection,
  ): Promise<{ cursor?: string; responses: { messageId: string }[] }> {
    const res = await this.http.request<{ cursor?: string; responses: { messageId: string }[] }>({
      method: 'POST',
      path: '/v2/dlq/retry',
      query: selectionQuery(sel),
    });
    return withCursor(res.cursor, { responses: res.responses });
  }
}
