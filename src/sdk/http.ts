import { FerryApiError } from './errors.js';

/** A query value; arrays become repeated parameters (`label=a&label=b`), `undefined` is skipped. */
export type QueryValue = string | number | boolean | readonly (string | number)[] | undefined;

/** One API call. `path` is appended to the base URL as given (it may carry its own query). */
export interface HttpRequest {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
  query?: Record<string, QueryValue>;
  headers?: Record<string, string>;
  body?: string | Uint8Array;
}

/**
 * Encodes a query with `encodeURIComponent` (spaces as `%20`, never `+`, so no server has to
 * guess) and repeats a parameter once per array element.
 */
export function encodeQuery(query: Record<string, QueryValue>): string {
  const parts: string[] = [];
  for (const [name, value] of Object.entries(query)) {
    if (value === undefined) continue;
    // Array.isArray does not narrow a readonly array type, so test for the scalar cases instead.
    const values: readonly (string | number | boolean)[] =
      typeof value === 'object' ? value : [value];
    for (const v of values) parts.push(`${encodeURIComponent(name)}=${encodeURIComponent(v)}`);
  }
  return parts.join('&');
}

/** Throws when a list that selects what to act on is empty: sending no ids would mean "all". */
export function assertNonEmpty(name: string, values: readonly unknown[] | undefined): void {
  if (values !== undefined && values.length === 0) {
    throw new TypeError(`${name} is empty; pass at least one id or leave it out`);
  }
}

/** Throws on an empty id, which would otherwise address the bulk endpoint of the collection. */
export function assertId(name: string, id: string): string {
  if (id === '') throw new TypeError(`${name} must not be empty`);
  return encodeURIComponent(id);
}

/**
 * The last page of a list has no `cursor`, but the workflow DLQ resume answers `cursor: ""` when
 * done (and older servers did so for every list): the SDK reports both as no cursor.
 */
export function withCursor<T extends object>(
  cursor: string | undefined,
  rest: T,
): T & { cursor?: string } {
  return cursor === undefined || cursor === '' ? rest : { ...rest, cursor };
}

/**
 * A bulk delete, `DELETE <path>?<query>` (ids or a filter's page): how many were removed, and
 * the cursor of the next page while there is one.
 */
export async function bulkDelete(
  http: HttpClient,
  path: string,
  query: Record<string, QueryValue>,
): Promise<{ deleted: number; cursor?: string }> {
  const res = await http.request<{ deleted: number; cursor?: string }>({
    method: 'DELETE',
    path,
    query,
  });
  return withCursor(res.cursor, { deleted: res.deleted });
}

/** The fetch wrapper shared by every resource: auth, URL building, error mapping, JSON parsing. */
export class HttpClient {
  private readonly baseUrl: string;

  /** @param authorization the `Authorization` header value (`Bearer <token>`, `Basic …`) */
  constructor(
    baseUrl: string,
    private readonly authorization: string,
  ) {
    this.baseUrl = baseUrl.replace(/\/+$/, '');
  }

  /**
   * Sends the request and returns the parsed JSON body (`undefined` for an empty body).
   * Non-2xx → {@link FerryApiError} with the server's `{"error"}` text.
   */
  async request<T>(req: HttpRequest): Promise<T> {
    const text = await (await this.send(req)).text();
    return (text === '' ? undefined : JSON.parse(text)) as T;
  }

  /** Sends the request and returns the response unread (a download); non-2xx throws as above. */
  async send(req: HttpRequest): Promise<Response> {
    const query = req.query === undefined ? '' : encodeQuery(req.query);
    const separator = req.path.includes('?') ? '&' : '?';
    const url = `${this.baseUrl}${req.path}${query === '' ? '' : separator + query}`;
    // `Headers.set` replaces case-insensitively, so a caller's header wins over the default.
    const headers = new Headers({ Authorization: this.authorization });
    for (const [name, value] of Object.entries(req.headers ?? {})) headers.set(name, value);
    const res = await fetch(url, { method: req.method, headers, body: req.body });
    if (!res.ok) {
      const text = await res.text();
      throw new FerryApiError(res.status, errorMessage(res, text), res.headers, text);
    }
    return res;
  }
}

function errorMessage(res: Response, text: string): string {
  try {
    const parsed = JSON.parse(text) as unknown;
    if (typeof parsed === 'object' && parsed !== null && 'error' in parsed) {
      const { error } = parsed;
      if (typeof error === 'string') return error;
    }
  } catch {
    // Not JSON: the raw body is the message.
  }
  return text === '' ? `HTTP ${res.status} ${res.statusText}`.trim() : text;
}
