import { assertId, type HttpClient } from './http.js';
import type { UrlGroup, UrlGroupEndpoint } from './types.js';

/** `/v2/topics`: URL groups. Publishing to a group's name fans out to every endpoint. */
export class UrlGroupsApi {
  constructor(private readonly http: HttpClient) {}

  /** Adds endpoints, creating the group when it does not exist; the same URL twice is one endpoint. */
  async addEndpoints(name: string, endpoints: UrlGroupEndpoint[]): Promise<UrlGroup> {
    return this.http.request<UrlGroup>({
      method: 'POST',
      path: `/v2/topics/${assertId('name', name)}/endpoints`,
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ endpoints }),
    });
  }

  /**
   * Removes endpoints by URL, name or both. Removing the last one deletes the group (the result
   * is then `undefined`).
   */
  async removeEndpoints(
    name: string,
    endpoints: Partial<UrlGroupEndpoint>[],
  ): Promise<UrlGroup | undefined> {
    const result = await this.http.request<UrlGroup | { deleted: true }>({
      method: 'DELETE',
      path: `/v2/topics/${assertId('name', name)}/endpoints`,
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ endpoints }),
    });
    return 'name' in result ? result : undefined;
  }

  /**
   * Replaces the group's default headers (`{}` removes them). They apply to every publish to the
   * group unless the publish sets the same header: `<P>-*` settings (`Svc-Retries`) and plain
   * headers, which are forwarded to every endpoint.
   */
  async setHeaders(name: string, headers: Record<string, string | string[]>): Promise<UrlGroup> {
    return this.http.request<UrlGroup>({
      method: 'PATCH',
      path: `/v2/topics/${assertId('name', name)}`,
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ headers }),
    });
  }

  async get(name: string): Promise<UrlGroup> {
    return this.http.request<UrlGroup>({
      method: 'GET',
      path: `/v2/topics/${assertId('name', name)}`,
    });
  }

  /** Every group of the account, by name. */
  async list(): Promise<UrlGroup[]> {
    return this.http.request<UrlGroup[]>({ method: 'GET', path: '/v2/topics' });
  }

  async delete(name: string): Promise<void> {
    await this.http.request({ method: 'DELETE', path: `/v2/topics/${assertId('name', name)}` });
  }
}
