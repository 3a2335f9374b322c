/**
 * Messaging authentication: `Authorization: Bearer <token>`, or the `queue_token` query
 * parameter (`qstash_token` accepted as an alias) for webhook senders that cannot set headers.
 */
import type { FastifyRequest } from 'fastify';
import { TOKEN_PARAMS } from '../core/destination.js';
import { unauthorized } from '../core/errors.js';
import type { ApiContext } from './context.js';

export function tokenOf(request: FastifyRequest): string | undefined {
  // A webhook sender may set its own Authorization (Basic, a signature scheme…): only a Bearer
  // token is Ferry's; otherwise the query token decides.
  const bearer = /^Bearer\s+(.+)$/i.exec(request.headers.authorization ?? '')?.[1]?.trim();
  if (bearer) return bearer;
  const query = request.url.indexOf('?');
  if (query === -1) return undefined;
  const params = new URLSearchParams(request.url.slice(query + 1));
  for (const name of TOKEN_PARAMS) {
    const token = params.get(name);
    if (token) return token;
  }
  return undefined;
}

export function authHook(ctx: ApiContext) {
  return async (request: FastifyRequest): Promise<void> => {
    const token = tokenOf(request);
    if (!token) throw unauthorized('missing token: send Authorization: Bearer <token>');
    const account = await ctx.accounts.authenticate(token);
    if (!account) throw unauthorized('invalid token');
    request.account = account;
  };
}
