/** `POST /v2/admin/users {email}` → `{email, api_key}`: administrators create management users. */
import { randomBytes, randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { badRequest, FerryError } from '../../core/errors.js';
import type { ManagementUser } from '../../core/management.js';
import { hashPassword } from '../../core/token.js';
import type { Executor } from '../../storage/driver.js';
import { jsonBody } from './body.js';
import type { MgmtContext } from './context.js';

const EMAIL = /^[^\s@]+@[^\s@]+$/;

/** A valid e-mail, lowercased (e-mails are unique case-insensitively). */
export function parseEmail(value: unknown): string {
  if (typeof value !== 'string' || value.length > 254 || !EMAIL.test(value)) {
    throw badRequest(`email must be an e-mail address, got ${JSON.stringify(value) ?? 'nothing'}`);
  }
  return value.toLowerCase();
}

/**
 * Creates a management user with a fresh API key; returns the user and the key (stored only as
 * its SHA-256, so this is the one time it can be shown). A taken e-mail is a 409.
 */
export async function createUser(p: {
  executor: Executor;
  email: string;
  admin: boolean;
  now: number;
}): Promise<{ user: ManagementUser; apiKey: string }> {
  const email = parseEmail(p.email);
  if (await p.executor.userGetByEmail({ email })) {
    throw new FerryError(409, `a user with email "${email}" already exists`);
  }
  const apiKey = randomBytes(24).toString('base64url');
  const user: ManagementUser = {
    id: randomUUID(),
    email,
    apiKeyHash: hashPassword(apiKey),
    admin: p.admin,
    createdAt: p.now,
  };
  await p.executor.userInsert({ user });
  return { user, apiKey };
}

export function userRoutes(app: FastifyInstance, ctx: MgmtContext): void {
  app.post('/v2/admin/users', async (request) => {
    if (!request.mgmtUser.admin) throw new FerryError(403, 'only administrators create users');
    const body = jsonBody(request, ['email']);
    const { user, apiKey } = await createUser({
      executor: ctx.executor,
      email: parseEmail(body.email),
      admin: false,
      now: ctx.clock.now(),
    });
    return { email: user.email, api_key: apiKey };
  });
}
