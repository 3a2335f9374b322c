/**
 * Messaging authentication: `Authorization: Bearer <token>`, or the `queue_token` query
 * parameter (`qstash_token` accepted as an alias) for webhook senders that cannot set headers.
 */
import type { FastifyRequest } from 'fastify';
import { unauthorized } from '../core/errors.js';
import type { ApiContext } from './context.js';

export function tokenOf(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  if (header) {
    const match = /^Bearer\s+(.+)$/i.exec(header);
    return match?.[1]?.trim();
  }
  const query = request.url.indexOf('?');
  if (query === -1) return undefined;
  const params = new URLSearchParams(request.url.slice(query + 1));
  return params.get('queue_token') ?? params.get('qstash_token') ?? undefined;
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
