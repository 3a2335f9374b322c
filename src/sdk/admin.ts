/**
 * `FerryAdmin`: a typed client for Ferry's management API (messaging accounts, usage statistics,
 * search indexes, users), authenticated with `Basic base64(email:api_key)`.
 */
import type {
  AccountRegion,
  MessagingAccount,
  PlanName,
  SearchIndex,
  SearchIndexRegion,
  SearchIndexType,
  StatsPeriod,
  UsageStats,
} from './admin-types.js';
import { assertId, HttpClient } from './http.js';

/** Options of {@link FerryAdmin}. */
export interface FerryAdminOptions {
  /** The management API's URL (`mgmtUrl` of credentials.json). */
  baseUrl: string;
  email: string;
  apiKey: string;
}

/** A request with a JSON body. */
function sendJson<T>(
  http: HttpClient,
  method: 'POST' | 'PATCH',
  path: string,
  body: object,
): Promise<T> {
  return http.request({
    method,
    path,
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
}

/** Messaging accounts of the calling user. */
export class AccountsAdminApi {
  constructor(private readonly http: HttpClient) {}

  /** Creates an account (plan `free` and region `us-east-1` by default); has its token. */
  create(p: { region?: AccountRegion; type?: PlanName } = {}): Promise<MessagingAccount> {
    return sendJson(this.http, 'POST', '/v2/queue', p);
  }
  list(): Promise<MessagingAccount[]> {
    return this.http.request({ method: 'GET', path: '/v2/queue' });
  }
  get(id: string): Promise<MessagingAccount> {
    return this.http.request({ method: 'GET', path: `/v2/queue/${assertId('id', id)}` });
  }
  /** Deletes the account and its data; its token stops working. Returns the deleted account. */
  delete(id: string): Promise<MessagingAccount> {
    return this.http.request({ method: 'DELETE', path: `/v2/queue/${assertId('id', id)}` });
  }
  setPlan(id: string, plan: PlanName): Promise<MessagingAccount> {
    return sendJson(this.http, 'POST', `/v2/queue/set-plan/${assertId('id', id)}`, {
      plan_name: plan,
    });
  }
  /** Monthly budget in dollars; 0 removes the limit. */
  updateBudget(id: string, budget: number): Promise<MessagingAccount> {
    return sendJson(this.http, 'PATCH', `/v2/queue/update-budget/${assertId('id', id)}`, {
      budget,
    });
  }
  /** A new password and token; the old token is refused from the next request on. */
  rotateToken(id: string): Promise<MessagingAccount> {
    return this.http.request({
      method: 'POST',
      path: `/v2/queue/rotate-token/${assertId('id', id)}`,
    });
  }
  stats(id: string, period?: StatsPeriod): Promise<UsageStats> {
    return this.http.request({
      method: 'GET',
      path: `/v2/queue/stats/${assertId('id', id)}`,
      query: { period },
    });
  }
}

/** Search index records of the calling user. */
export class SearchAdminApi {
  constructor(private readonly http: HttpClient) {}

  create(p: {
    name: string;
    region: SearchIndexRegion;
    type: SearchIndexType;
  }): Promise<SearchIndex> {
    return sendJson(this.http, 'POST', '/v2/search', p);
  }
  list(): Promise<SearchIndex[]> {
    return this.http.request({ method: 'GET', path: '/v2/search' });
  }
  get(id: string): Promise<SearchIndex> {
    return this.http.request({ method: 'GET', path: `/v2/search/${assertId('id', id)}` });
  }
  delete(id: string): Promise<SearchIndex> {
    return this.http.request({ method: 'DELETE', path: `/v2/search/${assertId('id', id)}` });
  }
  rename(id: string, name: string): Promise<SearchIndex> {
    return sendJson(this.http, 'POST', `/v2/search/${assertId('id', id)}/rename`, { name });
  }
  /** New read-write and read-only tokens. */
  resetPassword(id: string): Promise<SearchIndex> {
    return this.http.request({
      method: 'POST',
      path: `/v2/search/${assertId('id', id)}/reset-password`,
    });
  }
}

export class FerryAdmin {
  readonly accounts: AccountsAdminApi;
  readonly search: SearchAdminApi;
  private readonly http: HttpClient;

  constructor(opts: FerryAdminOptions) {
    const credentials = new TextEncoder().encode(`${opts.email}:${opts.apiKey}`);
    this.http = new HttpClient(opts.baseUrl, `Basic ${base64(credentials)}`);
    this.accounts = new AccountsAdminApi(this.http);
    this.search = new SearchAdminApi(this.http);
  }

  /**
   * Administrators only, SQLite only: an online copy of the server's database (SQLite's backup
   * API; deliveries go on meanwhile), as the body of the answer. Write it to a file; `ferry
   * restore` puts it back. A PostgreSQL server answers 400 (use `pg_dump`).
   */
  async backup(): Promise<ReadableStream<Uint8Array>> {
    const res = await this.http.send({ method: 'POST', path: '/v2/admin/backup' });
    if (res.body === null) throw new Error('the backup answer has no body');
    return res.body;
  }

  /** Administrators only: a new management user; its API key is shown only here. */
  createUser(email: string): Promise<{ email: string; api_key: string }> {
    return sendJson(this.http, 'POST', '/v2/admin/users', { email });
  }
}

/** Base64 of bytes with `btoa` (in Node 16+ and every browser/edge runtime; no Buffer needed). */
function base64(bytes: Uint8Array): string {
  let binary = '';
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary);
}
