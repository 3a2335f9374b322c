/**
 * Builds the HTTP API. Every request body is read as raw bytes (publish passes bodies through
 * byte for byte; JSON endpoints parse their own), capped at the largest plan's message size;
 * each account's own `max_message_size` is checked per request (413).
 */
import Fastify, { type FastifyInstance } from 'fastify';
import { authHook } from './auth.js';
import type { ApiContext } from './context.js';
import { installErrorHandling } from './errors.js';
import { dlqRoutes } from './routes/dlq.js';
import { eventRoutes } from './routes/events.js';
import { keyRoutes } from './routes/keys.js';
import { messageRoutes } from './routes/messages.js';
import { publishRoutes } from './routes/publish.js';
import { scheduleRoutes } from './routes/schedules.js';

export interface ServerOptions {
  /** Largest request body accepted at all, in bytes (the largest plan's max_message_size). */
  bodyLimit: number;
}

export function buildServer(ctx: ApiContext, options: ServerOptions): FastifyInstance {
  const app = Fastify({
    logger: false,
    bodyLimit: options.bodyLimit,
    // The destination URL is part of the path and may be long.
    routerOptions: { maxParamLength: 16 * 1024 },
    return503OnClosing: true,
    forceCloseConnections: 'idle',
  });
  installErrorHandling(app, ctx.logger);
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));

  app.get('/health', () => ({ status: 'ok' }));

  void app.register((messaging, _opts, done) => {
    messaging.decorateRequest('account');
    messaging.addHook('onRequest', authHook(ctx));
    publishRoutes(messaging, ctx);
    messageRoutes(messaging, ctx);
    eventRoutes(messaging, ctx);
    dlqRoutes(messaging, ctx);
    keyRoutes(messaging, ctx);
    scheduleRoutes(messaging, ctx);
    done();
  });
  return app;
}
