/**
 * Management authentication: `Authorization: Basic base64(email:api_key)`. The key is compared
 * with its stored SHA-256 in constant time; an unknown e-mail costs the same comparison, so the
 * answer's timing does not tell which e-mails exist. Failures are 401 with `WWW-Authenticate`.
 */
import type { FastifyRequest } from 'fastify';
import { FerryError } from '../../core/errors.js';
import { hashPassword, passwordMatches } from '../../core/token.js';
import type { MgmtContext } from './context.js';

const CHALLENGE = { 'WWW-Authenticate': 'Basic realm="ferry-management", charset="UTF-8"' };
const DUMMY_HASH = hashPassword('no such user');

const refused = (message: string): FerryError =>
  new FerryError(401, message, { headers: CHALLENGE });

/** The e-mail and key of a Basic header, or undefined when it is not one. */
export function parseBasic(header: string | undefined): { email: string; key: string } | undefined {
  const encoded = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header ?? '')?.[1];
  if (!encoded) return undefined;
  const text = Buffer.from(encoded, 'base64').toString('utf8');
  const colon = text.indexOf(':');
  if (colon <= 0) return undefined;
  return { email: text.slice(0, colon), key: text.slice(colon + 1) };
}

export function mgmtAuthHook(ctx: MgmtContext) {
  return async (request: FastifyRequest): Promise<void> => {
    const credentials = parseBasic(request.headers.authorization);
    if (!credentials) {
      throw refused('missing credentials: send Authorization: Basic base64(email:api_key)');
    }
    const user = await ctx.executor.userGetByEmail({ email: credentials.email.toLowerCase() });
    const matches = passwordMatches(credentials.key, user?.apiKeyHash ?? DUMMY_HASH);
    if (!user || !matches) throw refused('invalid e-mail or API key');
    request.mgmtUser = user;
  };
}
