/** JSON request bodies of the management API (the server reads every body as raw bytes). */
import type { FastifyRequest } from 'fastify';
import { badRequest } from '../../core/errors.js';
import { jsonBody as parseJson } from '../json-body.js';

/**
 * Largest management request body, bytes: these bodies are a few small JSON fields. It applies
 * to the management routes wherever they are served, on `--mgmt-port` or on the main port (whose
 * own limit is the largest plan's `max_message_size`, for publishes).
 */
export const MGMT_BODY_LIMIT = 64 * 1024;

/**
 * The body as a JSON object (`{}` when empty). Fields other than `allowed` are refused, so a
 * misspelt field is a 400 naming it rather than silently ignored.
 */
export function jsonBody(
  request: FastifyRequest,
  allowed: readonly string[],
): Record<string, unknown> {
  const parsed = parseJson(request, () => ({}));
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw badRequest('request body must be a JSON object');
  }
  for (const field of Object.keys(parsed)) {
    if (!allowed.includes(field)) {
      throw badRequest(
        `unknown field "${field}" (allowed: ${allowed.length > 0 ? allowed.join(', ') : 'none'})`,
      );
    }
  }
  return parsed as Record<string, unknown>;
}

/** `value` when it is one of `allowed`, else a 400 naming `field`; `fallback` when absent. */
export function oneOf<T extends string>(
  field: string,
  value: unknown,
  allowed: readonly T[],
  fallback?: T,
): T {
  if (value === undefined && fallback !== undefined) return fallback;
  if (typeof value === 'string' && (allowed as readonly string[]).includes(value))
    return value as T;
  throw badRequest(
    `${field} must be one of ${allowed.join(', ')}, got ${JSON.stringify(value) ?? 'nothing'}`,
  );
}
