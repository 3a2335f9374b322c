import type { HttpClient } from './http.js';
import type { SigningKeys } from './types.js';

/** `/v2/keys`: the signing keys a `Receiver` needs. */
export class KeysApi {
  constructor(private readonly http: HttpClient) {}

  async get(): Promise<SigningKeys> {
    return this.http.request<SigningKeys>({ method: 'GET', path: '/v2/keys' });
  }

  /**
   * Next becomes current and a new next is drawn. Receivers configured with the old pair keep
   * working (they try next); update them to the new pair before rotating again.
   */
  async rotate(): Promise<SigningKeys> {
    return this.http.request<SigningKeys>({ method: 'POST', path: '/v2/keys/rotate' });
  }
}
