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

/** Seconds a client is asked to wait (`Retry-After`) when storage is unavailable. */
export const STORAGE_RETRY_AFTER_S = 5;

/** Driver error codes that mean the database cannot be reached right now, not a bug. */
const UNAVAILABLE_CODES = new Set([
  // postgres.js and Node sockets
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  'CONNECT_TIMEOUT',
  // PostgreSQL: shutting down, crashed, starting up; too many connections; out of disk
  '57P01',
  '57P02',
  '57P03',
  '53300',
  '53100',
  // SQLite: the disk or the database file is full, or I/O failed
  'SQLITE_FULL',
  'SQLITE_IOERR',
]);

/**
 * Whether `error` (or an error it wraps) says storage is unreachable or full: such a request is
 * answered 503 with Retry-After, as the client can repeat it, rather than 500.
 */
export function isStorageUnavailable(error: unknown): boolean {
  for (let e = error, depth = 0; e instanceof Error && depth < 5; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string') {
      // PostgreSQL's class 08 is "connection exception"; SQLite extends codes (SQLITE_IOERR_WRITE).
      if (UNAVAILABLE_CODES.has(code) || code.startsWith('08')) return true;
      if (code.startsWith('SQLITE_IOERR') || code.startsWith('SQLITE_FULL')) return true;
    }
    e = e.cause;
  }
  return false;
}

export function installErrorHandling(app: FastifyInstance, logger: Logger): void {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (error instanceof FerryError) {
      if (error.headers) void reply.headers(error.headers);
      return reply.code(error.status).send({ error: error.message });
    }
    if (isStorageUnavailable(error)) {
      logger.warn(
        { err: error, reqId: request.id, route: request.routeOptions.url },
        'storage unavailable',
      );
      return reply
        .code(503)
        .header('retry-after', String(STORAGE_RETRY_AFTER_S))
        .send({ error: 'storage is unavailable; nothing was stored, try again later' });
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
