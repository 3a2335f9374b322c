/**
 * The one place errors become responses: `{"error": "..."}` with the error's status. A client's
 * mistake is always a 4xx; anything unexpected is logged and answered 500 without details.
 */
import type { FastifyError, FastifyInstance, FastifyRequest } from 'fastify';
import { FerryError } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import { MGMT_BODY_LIMIT } from './mgmt/body.js';
import { STORAGE_NO_ANSWER, StorageNoAnswerError } from '../storage/storage-deadline.js';

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
  // The database did not answer in time or lost the connection (storage/storage-deadline.ts)
  STORAGE_NO_ANSWER,
]);

/** The answer when storage failed and nothing the request asked for was written. */
export const STORAGE_UNAVAILABLE_ERROR =
  'storage is unavailable; nothing was stored, try again later';

/**
 * The answer when the database did not confirm a write in time: it may have been applied. A
 * client that repeats the request may then apply it twice (a publish is delivered twice unless
 * it carries a deduplication id); saying "nothing was stored" could be a lie.
 */
export const STORAGE_OUTCOME_UNKNOWN_ERROR =
  'storage did not confirm the write in time; it may have been stored: check before repeating ' +
  'it, or repeat a publish with the same deduplication id so it is not stored twice';

/** The 503's error text for a storage failure: unknown outcome, or nothing stored. */
function storageErrorText(error: unknown, method: string): string {
  if (method === 'GET' || method === 'HEAD') return STORAGE_UNAVAILABLE_ERROR;
  for (let e = error, depth = 0; e instanceof Error && depth < 5; depth++) {
    if (e instanceof StorageNoAnswerError && e.applied === 'unknown') {
      return STORAGE_OUTCOME_UNKNOWN_ERROR;
    }
    e = e.cause;
  }
  return STORAGE_UNAVAILABLE_ERROR;
}

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

/** Codes of a request stream that ended because its client went away (or was cut off). */
const DISCONNECT_CODES = new Set([
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ERR_STREAM_PREMATURE_CLOSE',
]);

/**
 * Whether `error` is the client's connection ending before its request was received (it hung
 * up, or `--request-timeout` cut it off): a socket error, not storage's, though it carries the
 * same `ECONNRESET`.
 */
export function isClientDisconnect(error: unknown, request: FastifyRequest): boolean {
  const code = (error as { code?: unknown } | undefined)?.code;
  return (
    typeof code === 'string' &&
    DISCONNECT_CODES.has(code) &&
    !request.raw.complete &&
    request.raw.destroyed
  );
}

export function installErrorHandling(app: FastifyInstance, logger: Logger): void {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (error instanceof FerryError) {
      if (error.headers) void reply.headers(error.headers);
      return reply.code(error.status).send({ error: error.message });
    }
    if (isClientDisconnect(error, request)) {
      // Nobody reads the answer; logged at debug only, as it is not the server's problem.
      logger.debug(
        { reqId: request.id, route: request.routeOptions.url, code: error.code },
        'client disconnected before its request was received',
      );
      return reply.code(400).send({ error: 'the client closed the connection' });
    }
    if (isStorageUnavailable(error)) {
      logger.warn(
        { err: error, reqId: request.id, route: request.routeOptions.url },
        'storage unavailable',
      );
      return reply
        .code(503)
        .header('retry-after', String(STORAGE_RETRY_AFTER_S))
        .send({ error: storageErrorText(error, request.method) });
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
    // A method may be listed once per route matching the path (`/v2/queues/:name` and
    // `/v2/queues/:name/pause` patterns, or a route registered on two plugins): once each.
    const allowed = [
      ...new Set(
        routes.filter((r) => r.method !== 'HEAD' && r.pattern.test(path)).map((r) => r.method),
      ),
    ];
    if (allowed.length > 0) {
      return reply
        .code(405)
        .header('allow', allowed.join(', '))
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
