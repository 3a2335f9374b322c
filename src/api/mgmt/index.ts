/**
 * The management API: `/v2/queue…` (messaging accounts and their statistics), `/v2/search…`
 * (search indexes) and `/v2/admin…` (users, backups), behind Basic authentication. Kept apart from the
 * messaging routes: none of these paths is a messaging path, and the messaging Bearer auth does
 * not run here (it is registered in the messaging scope only).
 */
import type { FastifyInstance } from 'fastify';
import { accountRoutes } from './accounts.js';
import { backupRoutes } from './backup.js';
import { MGMT_BODY_LIMIT } from './body.js';
import { mgmtAuthHook } from './auth.js';
import type { MgmtContext } from './context.js';
import { searchRoutes } from './search.js';
import { statsRoutes } from './stats.js';
import { userRoutes } from './users.js';

export type { MgmtContext } from './context.js';
export { MGMT_BODY_LIMIT } from './body.js';

/** Registers the management routes in a scope of their own on `app`. */
export function registerManagement(app: FastifyInstance, ctx: MgmtContext): void {
  void app.register((mgmt, _opts, done) => {
    mgmt.decorateRequest('mgmtUser');
    // Every route of this scope takes the management limit (onRoute may set route options).
    mgmt.addHook('onRoute', (route) => {
      route.bodyLimit = MGMT_BODY_LIMIT;
    });
    mgmt.addHook('onRequest', mgmtAuthHook(ctx));
    accountRoutes(mgmt, ctx);
    statsRoutes(mgmt, ctx);
    searchRoutes(mgmt, ctx);
    userRoutes(mgmt, ctx);
    backupRoutes(mgmt, ctx);
    done();
  });
}
