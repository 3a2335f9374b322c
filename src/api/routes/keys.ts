/** Signing keys: `GET /v2/keys` and `POST /v2/keys/rotate` (next becomes current, a new next). */
import type { FastifyInstance } from 'fastify';
import { newSigningKey } from '../../core/ids.js';
import type { ApiContext } from '../context.js';

export function keyRoutes(app: FastifyInstance, ctx: ApiContext): void {
  app.get('/v2/keys', (request) => ({
    current: request.account.currentSigningKey,
    next: request.account.nextSigningKey,
  }));

  app.post('/v2/keys/rotate', async (request) => {
    const account = request.account;
    const current = account.nextSigningKey;
    const next = newSigningKey();
    await ctx.executor.accountUpdateSigningKeys({
      id: account.id,
      currentSigningKey: current,
      nextSigningKey: next,
    });
    ctx.accounts.forget(account.id);
    return { current, next };
  });
}
