/**
 * Checks every request's path and query before any route sees it: two mistakes that routes
 * would otherwise each have to catch, or answer with a misleading message.
 *
 * **NUL.** U+0000 in a decoded path parameter or query parameter is a 400.
 *
 * No id, name, filter or cursor Ferry accepts can hold a NUL character, and PostgreSQL cannot
 * even compare one with a text column (`invalid byte sequence for encoding "UTF8": 0x00`), which
 * made every route that passed one through answer 500. SQLite stores it and answered 404 or, for
 * `POST /v2/wait/%00`, accepted it. One rule here instead of a check in every route and driver.
 *
 * The destination of a `…/*` route (publish, enqueue, schedules) is exempt, and so are the query
 * parameters that belong to it: they are taken from the raw URL undecoded and delivered as they
 * were given (`%00` stays three characters), so they never reach storage as NUL. Ferry's own
 * parameters on those routes (`<prefix>-…`, `queue_token`) are checked like any other.
 *
 * **Repeated parameters.** A query parameter the route's schema takes once (`count`, `cursor`,
 * `fromDate`) but sent twice (`count=1&count=2`) is a 400 saying so; the schema check reported
 * `query parameter "count": must be integer`, which sent the client looking at the value.
 */
import type { FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';
import { badRequest } from '../core/errors.js';
import { TOKEN_PARAMS } from '../core/destination.js';

/** The route parameter that holds a raw destination URL (`/v2/publish/*`). */
const WILDCARD = '*';

const nulError = (where: string, name: string) =>
  badRequest(`invalid ${where} ${JSON.stringify(name)}: contains a NUL character (U+0000)`);

/** True when `schema` (a TypeBox / JSON schema) may be an array. */
function takesArray(schema: unknown): boolean {
  if (typeof schema !== 'object' || schema === null) return true; // unknown: leave it be
  const s = schema as { type?: unknown; anyOf?: unknown; oneOf?: unknown };
  if (s.type === 'array' || (Array.isArray(s.type) && s.type.includes('array'))) return true;
  const branches = [s.anyOf, s.oneOf].filter(Array.isArray).flat() as unknown[];
  if (branches.length > 0) return branches.some(takesArray);
  return s.type === undefined;
}

/** The schema of query parameter `name` on the request's route, if it declares one. */
function querySchema(request: FastifyRequest, name: string): unknown {
  const schema = request.routeOptions.schema?.querystring as
    { properties?: Record<string, unknown> } | undefined;
  return schema?.properties?.[name];
}

/**
 * An `onRequest` hook refusing NUL in path parameters and query parameters (names and values),
 * and a query parameter given more than once where the route takes one, with 400 naming the
 * parameter.
 * @param prefix the header prefix (`Svc`), whose `<prefix>-…` query parameters are Ferry's own
 *   on destination routes.
 */
export function inputGuard(prefix: string): onRequestHookHandler {
  const ferryPrefix = `${prefix.toLowerCase()}-`;
  return (request: FastifyRequest, _reply: FastifyReply, done: (error?: Error) => void) => {
    const params = (request.params ?? {}) as Record<string, unknown>;
    const hasDestination = WILDCARD in params;
    for (const [name, value] of Object.entries(params)) {
      if (name !== WILDCARD && typeof value === 'string' && value.includes('\0')) {
        done(nulError('path parameter', name));
        return;
      }
    }
    const query = (request.query ?? {}) as Record<string, unknown>;
    for (const [name, value] of Object.entries(query)) {
      if (
        hasDestination &&
        !TOKEN_PARAMS.has(name) &&
        !name.toLowerCase().startsWith(ferryPrefix)
      ) {
        continue;
      }
      const values: unknown[] = Array.isArray(value) ? value : [value];
      if (name.includes('\0') || values.some((v) => typeof v === 'string' && v.includes('\0'))) {
        done(nulError('query parameter', name));
        return;
      }
      if (Array.isArray(value)) {
        const schema = querySchema(request, name);
        if (schema !== undefined && !takesArray(schema)) {
          done(
            badRequest(
              `query parameter ${JSON.stringify(name)} is given ${value.length} times: give it once`,
            ),
          );
          return;
        }
      }
    }
    done();
  };
}
