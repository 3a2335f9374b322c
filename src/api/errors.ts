/**
 * The one place errors become responses: `{"error": "..."}` with the error's status. A client's
 * mistake is always a 4xx; anything unexpected is logged and answered 500 without details.
 */
import type { FastifyError, FastifyInstance, FastifyRequest } from 'fastify';
import { FerryError } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import { MGMT_BODY_LIMIT } from './mgmt/body.js';

/** Fastify's own client-error codes, with the message we answer them with. */
const FASTIFY_CLIENT_ERRORS: Record<string, (e: FastifyError, request: FastifyRequest) => string> =
  {
    FST_ERR_CTP_BODY_TOO_LARGE: (_e, request) =>
      request.routeOptions.bodyLimit === MGMT_BODY_LIMIT
        ? `request body is larger than the management API's limit of ${MGMT_BODY_LIMIT} bytes`
        : 'request body is larger than max_message_size',
    FST_ERR_CTP_INVALID_MEDIA_TYPE: (e) => e.message,
    FST_ERR_CTP_EMPTY_JSON_BODY: (e) => e.message,
    FST_ERR_CTP_INVALID_CONTENT_LENGTH: (e) => e.message,
    FST_ERR_BAD_URL: () => 'malformed URL',
  };

export function installErrorHandling(app: FastifyInstance, logger: Logger): void {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (error instanceof FerryError) {
      if (error.headers) void reply.headers(error.headers);
      return reply.code(error.status).send({ error: error.message });
    }
    const known = error.code ? FASTIFY_CLIENT_ERRORS[error.code] : undefined;
    const status = error.statusCode ?? 500;
    if (known || (status >= 400 && status < 500)) {
      return reply.code(status).send({ error: known ? known(error, request) : error.message });
    }
    // The route pattern, never the URL: it carries the token (`queue_token`), the destination
    // and its query.
    logger.error(
      { err: error, reqId: request.id, route: request.routeOptions.url, method: request.method },
      'request failed',
    );
    return reply.code(500).send({ error: 'internal error' });
  });
  // A path that exists under other methods answers 405 with `Allow`, not 404.
  const routes: { method: string; pattern: RegExp }[] = [];
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    for (const method of methods) routes.push({ method, pattern: routePattern(route.url) });
  });
  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0] ?? '';
    const allowed = routes
      .filter((r) => r.method !== 'HEAD' && r.pattern.test(path))
      .map((r) => r.method);
    if (allowed.length > 0) {
      return reply
        .code(405)
        .header('allow', [...new Set(allowed)].join(', '))
        .send({
          error: `method ${request.method} not allowed on ${path} (allowed: ${allowed.join(', ')})`,
        });
    }
    return reply.code(404).send({ error: `no endpoint ${request.method} ${path}` });
  });
}

/** A route URL (`/v2/messages/:id`, `/v2/publish/*`) as a regular expression over paths. */
function routePattern(url: string): RegExp {
  const source = url
    .split('/')
    .map((part) =>
      part === '*'
        ? '.*'
        : part.startsWith(':')
          ? '[^/]+'
          : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'),
    )
    .join('/');
  return new RegExp(`^${source}$`);
}
