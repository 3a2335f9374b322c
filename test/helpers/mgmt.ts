/** Management users for end-to-end tests: created in the test Ferry's storage, used over HTTP. */
import { createUser } from '../../src/api/mgmt/users.js';
import { randomBytes } from 'node:crypto';
import type { TestFerry } from './ferry.js';

export interface MgmtUser {
  email: string;
  apiKey: string;
  /** fetch against the management API with this user's Basic credentials. */
  api(path: string, init?: RequestInit): Promise<Response>;
  /** `api` that expects a 2xx and returns the parsed JSON. */
  json<T = Record<string, unknown>>(path: string, init?: RequestInit): Promise<T>;
}

export const basic = (email: string, key: string): string =>
  `Basic ${Buffer.from(`${email}:${key}`).toString('base64')}`;

export function mgmtUserOf(baseUrl: string, email: string, apiKey: string): MgmtUser {
  const api = (path: string, init: RequestInit = {}): Promise<Response> =>
    fetch(`${baseUrl}${path}`, {
      ...init,
      headers: {
        authorization: basic(email, apiKey),
        ...(init.headers as Record<string, string>),
      },
    });
  return {
    email,
    apiKey,
    api,
    async json<T>(path: string, init?: RequestInit): Promise<T> {
      const res = await api(path, init);
      const text = await res.text();
      if (!res.ok) throw new Error(`${init?.method ?? 'GET'} ${path}: ${res.status} ${text}`);
      return JSON.parse(text) as T;
    },
  };
}

export async function createMgmtUser(t: TestFerry, admin = false): Promise<MgmtUser> {
  const { user, apiKey } = await createUser({
    executor: t.ferry.driver.executor,
    email: `user-${randomBytes(4).toString('hex')}@example.com`,
    admin,
    now: Date.now(),
  });
  return mgmtUserOf(t.ferry.mgmtUrl, user.email, apiKey);
}

/** A messaging account created through the management API, with its token. */
export async function createQueueAccount(
  user: MgmtUser,
  body: Record<string, unknown> = {},
): Promise<{ id: string; token: string; [field: string]: unknown }> {
  return user.json('/v2/queue', { method: 'POST', body: JSON.stringify(body) });
}

/** fetch against the messaging API with a token. */
export const withToken =
  (baseUrl: string, token: string) =>
  (path: string, init: RequestInit = {}): Promise<Response> =>
    fetch(`${baseUrl}${path}`, {
      ...init,
      headers: { authorization: `Bearer ${token}`, ...(init.headers as Record<string, string>) },
    });
