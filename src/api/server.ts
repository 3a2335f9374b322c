/**
 * Builds the HTTP API. Every request body is read as raw bytes (publish passes bodies through
 * byte for byte; JSON endpoints parse their own), capped at the largest plan's message size;
 * each account's own `max_message_size` is checked per request (413).
 */
import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Logger } from '../core/logger.js';
import { authHook } from './auth.js';
import type { ApiContext } from './context.js';
import { registerConsole } from './console.js';
import { installErrorHandling } from './errors.js';
import {
  clientErrorHandler,
  frameworkErrors,
  installProtocolChecks,
  missingHost,
} from './client-errors.js';
import { installOpenApi, openApiRoute, type ApiDescription } from './openapi.js';
import { inputGuard } from './input-guard.js';
import { requestRateHook } from './limits.js';
import { metricsRoute, type MetricsEndpoint } from './metrics-route.js';
import { readinessRoute, type ReadinessOptions } from './readiness.js';
import { batchRoutes } from './routes/batch.js';
import { dlqRoutes } from './routes/dlq.js';
import { eventRoutes } from './routes/events.js';
import { MGMT_BODY_LIMIT, registerManagement, type MgmtContext } from './mgmt/index.js';
import { keyRoutes } from './routes/keys.js';
import { messageRoutes } from './routes/messages.js';
import { publishRoutes } from './routes/publish.js';
import { topicRoutes } from './routes/topics.js';
import { scheduleRoutes } from './routes/schedules.js';
import { workflowEventRoutes } from './routes/workflow-events.js';
import { workflowRoutes } from './routes/workflows.js';
import { workflowHookRoutes } from './routes/workflow-hooks.js';
import { flowControlRoutes } from './routes/flow-control.js';
import { queueRoutes } from './routes/queues.js';
import { messageListRoute } from './routes/message-list.js';
import { usageRoutes, type UsageReadOptions } from './routes/usage.js';

export interface ServerOptions {
  /** Largest request body accepted at all, in bytes (the largest plan's max_message_size). */
  bodyLimit: number;
  /** Serve the management API on this server too (absent when it has a port of its own). */
  management?: MgmtContext;
  ops: OpsOptions;
  /** Serve the web console at `/console` (`--no-console` turns it off). */
  console?: boolean;
  /** `GET /v2/usage` and `/v2/usage/now`: the token's own metering (routes/usage.ts). */
  usage?: UsageReadOptions;
}

/** What every Ferry server serves besides its API: `/health`, `/ready`, maybe `/metrics`. */
export interface OpsOptions {
  readiness: ReadinessOptions;
  /** Serve `/metrics` on this server (absent: not here, or on `--metrics-port`). */
  metrics?: MetricsEndpoint;
  /** Log one line per request at debug level (only when the log level is debug). */
  logRequests: boolean;
  /**
   * The longest a client may take to send a whole request, headers and body, in ms
   * (`--request-timeout`); past it the request is answered 408 and its connection closed.
   * Default 60 s.
   */
  requestTimeoutMs?: number;
}

/** `--request-timeout`'s default, ms. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 60_000;

/** An `X-Request-Id` a client or proxy sent that is safe to log and echo; else Ferry makes one. */
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * A Fastify instance with Ferry's error mapping, raw-body parsing, request ids, route schemas
 * (openapi.ts) and ops routes; `routes` adds the server's own routes.
 * @param prefix the header prefix, for the OpenAPI document's header names.
 */
function baseServer(
  logger: Logger,
  bodyLimit: number,
  ops: OpsOptions,
  api: ApiDescription,
  routes: (app: FastifyInstance) => void,
): FastifyInstance {
  const requestTimeoutMs = ops.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  const app = Fastify({
    // No request log: request URLs carry tokens (`queue_token`). Ferry logs route patterns only
    // (errors.ts, and the debug request line).
    logger: false,
    bodyLimit,
    // The destination URL is part of the path and may be long.
    routerOptions: { maxParamLength: 16 * 1024 },
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    // Fastify turns Node's request timeout off (0) by default, for servers behind a proxy that
    // bounds it; Ferry is often reached directly, and a body that stops arriving would hold its
    // connection and its buffered bytes forever. Node checks the deadline every
    // `connectionsCheckingInterval` (30 s by default), so the check runs at a tenth of the
    // timeout (at most every second) for the 408 to come near it.
    requestTimeout: requestTimeoutMs,
    http: {
      requestTimeout: requestTimeoutMs,
      headersTimeout: Math.min(60_000, requestTimeoutMs),
      connectionsCheckingInterval: Math.min(1_000, Math.max(10, Math.floor(requestTimeoutMs / 10))),
      // Checked in the onRequest hook below, to answer in Ferry's shape (Node's 400 has no body).
      requireHostHeader: false,
    },
    clientErrorHandler: clientErrorHandler(requestTimeoutMs),
    frameworkErrors,
    genReqId: (request) => {
      const given = request.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
  });
  installErrorHandling(app, logger);
  installProtocolChecks(app.server);
  installOpenApi(app, api);
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
  acceptAnyContentType(app);
  app.addHook('onRequest', (request, reply, done) => {
    void reply.header('x-request-id', request.id);
    if (missingHost(request.raw)) {
      void reply
        .code(400)
        .header('connection', 'close')
        .send({ error: 'missing Host header: HTTP/1.1 requests must carry one' });
      return;
    }
    done();
  });
  app.addHook('onRequest', inputGuard(api.prefix));
  if (ops.logRequests) {
    app.addHook('onResponse', (request, reply, done) => {
      // The route pattern, not the URL: a publish URL carries the destination and its query.
      logger.debug(
        {
          reqId: request.id,
          method: request.method,
          route: request.routeOptions.url,
          status: reply.statusCode,
          ms: Math.round(reply.elapsedTime * 10) / 10,
          accountId: request.account?.id,
        },
        'request',
      );
      done();
    });
  }

  // In a plugin loaded after @fastify/swagger (installOpenApi), which collects routes as they
  // are added.
  void app.register((scope, _opts, done) => {
    scope.get('/health', () => ({ status: 'ok' }));
    readinessRoute(scope, ops.readiness);
    if (ops.metrics) metricsRoute(scope, ops.metrics);
    routes(scope);
    done();
  });
  return app;
}

/**
 * Lets every `Content-Type` through to the raw-body parser above. Fastify answers `415` before
 * any parser runs when the header is not a valid media type (empty, `text`, `a, b`, a comment,
 * non-ASCII), but Ferry reads every body as raw bytes whatever its type (publish delivers it
 * byte for byte with the sender's `Content-Type`; JSON routes parse JSON whatever the header
 * says, as docs/api.md promises). So the header is set aside while the body is read and put
 * back before the route's own hooks and handler see the request.
 */
function acceptAnyContentType(app: FastifyInstance): void {
  const given = new WeakMap<FastifyRequest, string>();
  app.addHook('preParsing', (request, _reply, payload, done) => {
    const contentType = request.raw.headers['content-type'];
    if (contentType !== undefined) {
      given.set(request, contentType);
      request.raw.headers['content-type'] = 'application/octet-stream';
    }
    done(null, payload);
  });
  app.addHook('preValidation', (request, _reply, done) => {
    const contentType = given.get(request);
    if (contentType !== undefined) request.raw.headers['content-type'] = contentType;
    done();
  });
}

/**
 * The management API alone, for `--mgmt-port`; with `console`, the web console too (the
 * console on the main port cannot call another origin under its CSP, so management sign-in
 * happens on this port).
 */
export function buildManagementServer(
  ctx: MgmtContext,
  ops: OpsOptions,
  console?: { headerPrefix: string },
): FastifyInstance {
  const api = { prefix: DEFAULT_PREFIX, messaging: false, management: true };
  return baseServer(ctx.logger, MGMT_BODY_LIMIT, ops, api, (app) => {
    openApiRoute(app);
    registerManagement(app, ctx);
    if (console) {
      registerConsole(app, {
        headerPrefix: console.headerPrefix,
        messaging: false,
        management: true,
      });
    }
  });
}

/** `/metrics`, `/ready` and `/health` alone, for `--metrics-port`. */
export function buildOpsServer(logger: Logger, ops: OpsOptions): FastifyInstance {
  const api = { prefix: DEFAULT_PREFIX, messaging: false, management: false };
  return baseServer(logger, 1024, ops, api, () => undefined);
}

/** Bytes of a request's body plus its response's body, as sent (`Content-Length`). */
function exchangedBytes(request: FastifyRequest, reply: FastifyReply): number {
  const received = Number(request.headers['content-length'] ?? 0);
  const sent = Number(reply.getHeader('content-length') ?? 0);
  return (Number.isFinite(received) ? received : 0) + (Number.isFinite(sent) ? sent : 0);
}

/** The header prefix of a server without messaging routes (its document has no prefixed headers). */
const DEFAULT_PREFIX = 'Svc';

/** The routes whose answers are publish acknowledgements (`ferry_publish_ack_seconds`). */
const PUBLISH_ROUTES = new Set(['/v2/publish/*', '/v2/enqueue/:queue/*', '/v2/batch']);

export function buildServer(ctx: ApiContext, options: ServerOptions): FastifyInstance {
  const api = { prefix: ctx.prefix, messaging: true, management: options.management !== undefined };
  return baseServer(ctx.logger, options.bodyLimit, options.ops, api, (app) => {
    openApiRoute(app);
    if (options.management) registerManagement(app, options.management);
    if (options.console) {
      registerConsole(app, {
        headerPrefix: ctx.prefix,
        messaging: true,
        management: options.management !== undefined,
      });
    }
    messagingRoutes(app, ctx, options);
  });
}

function messagingRoutes(app: FastifyInstance, ctx: ApiContext, options: ServerOptions): void {
  void app.register((messaging, _opts, done) => {
    messaging.decorateRequest('account');
    messaging.addHook('onRequest', authHook(ctx));
    messaging.addHook('onRequest', requestRateHook(ctx));
    // Metered bandwidth: every authenticated exchange's body bytes, both ways.
    messaging.addHook('onResponse', (request, reply, done) => {
      if (request.account)
        ctx.usage.add(request.account.id, 'bandwidth', exchangedBytes(request, reply));
      if (reply.statusCode < 300 && PUBLISH_ROUTES.has(request.routeOptions.url ?? '')) {
        ctx.metrics.publishAcknowledged(reply.elapsedTime / 1000);
      }
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
    messageListRoute(messaging, ctx);
    if (options.usage) usageRoutes(messaging, ctx, options.usage);
    done();
  });
  // Workflow webhooks: no token, the URL is the capability (routes/workflow-hooks.ts).
  void app.register((hooks, _opts, done) => {
    workflowHookRoutes(hooks, ctx);
    done();
  });
}
