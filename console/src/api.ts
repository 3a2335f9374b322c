/**
 * The console's only way to the server: Ferry's public HTTP API on the same origin, with the
 * signed-in credential. Account isolation is therefore exactly the API's.
 */
import { authorization, loadCredential, type Credential } from './session';

/** An answer that was not 2xx, with the API's `{"error": …}` text when it sent one. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** Query values: repeated for arrays, left out when empty. */
export type Query = Record<string, string | number | boolean | string[] | undefined>;

export interface RequestOptions {
  method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  query?: Query;
  headers?: Record<string, string>;
  /** A string is sent as is; anything else as JSON. */
  body?: unknown;
  credential?: Credential;
}

let onUnauthorized: () => void = () => undefined;

/** Called when the server refuses the credential (401): the console signs out. */
export function setUnauthorizedHandler(handler: () => void): void {
  onUnauthorized = handler;
}

export function queryString(query: Query = {}): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    if (value === undefined || value === '') continue;
    for (const one of Array.isArray(value) ? value : [value]) params.append(name, String(one));
  }
  const text = params.toString();
  return text ? `?${text}` : '';
}

export async function request<T>(path: string, options: RequestOptions = {}): Promise<T> {
  const credential = options.credential ?? loadCredential();
  const headers: Record<string, string> = { ...options.headers };
  if (credential) headers.authorization = authorization(credential);
  let body: string | undefined;
  if (typeof options.body === 'string') body = options.body;
  else if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers['content-type'] ??= 'application/json';
  }
  let response: Response;
  try {
    response = await fetch(`${path}${queryString(options.query)}`, {
      method: options.method ?? 'GET',
      headers,
      body,
      credentials: 'omit',
      cache: 'no-store',
    });
  } catch (error) {
    throw new ApiError(0, `Ferry did not answer (${(error as Error).message})`);
  }
  const text = await response.text();
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  if (!response.ok) {
    if (response.status === 401 && !options.credential) onUnauthorized();
    const message = json && typeof json === 'object' && 'error' in json ? String(json.error) : text;
    throw new ApiError(response.status, message || `HTTP ${response.status}`);
  }
  return json as T;
}
