/**
 * Builds the HTTP API. Every request body is read as raw bytes (publish passes bodies through
 * byte for byte; JSON endpoints parse their own), capped at the largest plan's message size;
 * each account's own `max_message_size` is checked per request (413).
 */
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Logger } from '../core/logger.js';
import { authHook } from './auth.js';
import type { ApiContext } from './context.js';
import { registerConsole } from './console.js';
import { installErrorHandling } from './errors.js';
import { requestRateHook } from './limits.js';
import { batchRoutes } from './routes/batch.js';
import { dlqRoutes } from './routes/dlq.js';
import { eventRoutes } from './routes/events.js';
import { registerManagement, type MgmtContext } from './mgmt/index.js';
import { keyRoutes } from './routes/keys.js';
import { messageRoutes } from './routes/messages.js';
import { publishRoutes } from './routes/publish.js';
import { topicRoutes } from './routes/topics.js';
import { scheduleRoutes } from './routes/schedules.js';
import { workflowEventRoutes } from './routes/workflow-events.js';
import { workflowRoutes } from './routes/workflows.js';
import { flowControlRoutes } from './routes/flow-control.js';
import { queueRoutes } from './routes/queues.js';

export interface ServerOptions {
  /** Largest request body accepted at all, in bytes (the largest plan's max_message_size). */
  bodyLimit: number;
  /** Serve the management API on this server too (absent when it has a port of its own). */
  management?: MgmtContext;
  /** Serve the web console at `/console` (`--no-console` turns it off). */
  console?: boolean;
}

/** A Fastify instance with Ferry's error mapping, raw-body parsing and `/health`. */
function baseServer(logger: Logger, bodyLimit: number): FastifyInstance {
  const app = Fastify({
    logger: false,
    bodyLimit,
    // The destination URL is part of the path and may be long.
    routerOptions: { maxParamLength: 16 * 1024 },
    return503OnClosing: true,
    forceCloseConnections: 'idle',
  });
  installErrorHandling(app, logger);
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));

  app.get('/health', () => ({ status: 'ok' }));
  return app;
}

/** The management API alone, for `--mgmt-port`. */
export function buildManagementServer(ctx: MgmtContext): FastifyInstance {
  const app = baseServer(ctx.logger, MGMT_BODY_LIMIT);
  registerManagement(app, ctx);
  return app;
}

/** Management bodies are a few small JSON fields. */
const MGMT_BODY_LIMIT = 64 * 1024;

/** Bytes of a request's body plus its response's body, as sent (`Content-Length`). */
function exchangedBytes(request: FastifyRequest, reply: FastifyReply): number {
  const received = Number(request.headers['content-length'] ?? 0);
  const sent = Number(reply.getHeader('content-length') ?? 0);
  return (Number.isFinite(received) ? received : 0) + (Number.isFinite(sent) ? sent : 0);
}

export function buildServer(ctx: ApiContext, options: ServerOptions): FastifyInstance {
  const app = baseServer(ctx.logger, options.bodyLimit);
  if (options.management) registerManagement(app, options.management);
  if (options.console) registerConsole(app, { headerPrefix: ctx.prefix });

  void app.register((messaging, _opts, done) => {
    messaging.decorateRequest('account');
    messaging.addHook('onRequest', authHook(ctx));
    messaging.addHook('onRequest', requestRateHook(ctx));
    // Metered bandwidth: every authenticated exchange's body bytes, both ways.
    messaging.addHook('onResponse', (request, reply, done) => {
      if (request.account)
        ctx.usage.add(request.account.id, 'bandwidth', exchangedBytes(request, reply));
      done();
    });
    publishRoutes(messaging, ctx);
    batchRoutes(messaging, ctx);
    topicRoutes(messaging, ctx);
    messageRoutes(messaging, ctx);
    eventRoutes(messaging, ctx);
    dlqRoutes(messaging, ctx);
    keyRoutes(messaging, ctx);
    scheduleRoutes(messaging, ctx);
    workflowRoutes(messaging, ctx);
    workflowEventRoutes(messaging, ctx);
    flowControlRoutes(messaging, ctx);
    queueRoutes(messaging, ctx);
    done();
  });
  return app;
}
