/** JSON request bodies: every body arrives as raw bytes (see server.ts); JSON routes parse here. */
import type { FastifyRequest } from 'fastify';
import { badRequest } from '../core/errors.js';

/**
 * The request body parsed as JSON, whatever its Content-Type (clients often send none).
 *
 * Any string holding U+0000, key or value, is refused: the fields of these bodies become text
 * columns, names or header values, and PostgreSQL cannot store NUL in text (it answered 500).
 * @param whenEmpty the value of an empty body; without it an empty body is a 400.
 * @param nulAllowed paths (as named in errors: `entry 0.body`, `body.endpoints[0].url`) whose string is opaque bytes and
 *   may hold NUL: a batch entry's message body.
 * @throws FerryError 400 for a missing or malformed body, or a NUL naming the field.
 */
export function jsonBody(
  request: FastifyRequest,
  whenEmpty?: () => unknown,
  nulAllowed?: (path: string) => boolean,
): unknown {
  const body = request.body;
  // Decoded once, through a view of the bytes (no copy): a batch body may be large.
  const text =
    body instanceof Uint8Array
      ? Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8')
      : '';
  if (text.trim() === '') {
    if (whenEmpty) return whenEmpty();
    throw badRequest('missing request body: expected JSON');
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw badRequest(`invalid JSON body: ${(error as Error).message}`);
  }
  const allowed = nulAllowed ?? (() => false);
  // An array body is a batch: its items are named `entry <i>`, as the schema errors name them.
  const where = Array.isArray(parsed)
    ? parsed
        .map((item, i) => nulPath(item, `entry ${i}`, allowed))
        .find((found) => found !== undefined)
    : nulPath(parsed, 'body', allowed);
  if (where !== undefined) {
    throw badRequest(`invalid ${where}: contains a NUL character (U+0000)`);
  }
  return parsed;
}

/** The path of the first string in `value` (key or value) holding U+0000, if any. */
function nulPath(
  value: unknown,
  path: string,
  allowed: (path: string) => boolean,
): string | undefined {
  if (typeof value === 'string') {
    // The allowed strings (a batch entry's body) may be long: not scanned at all.
    return !allowed(path) && value.includes('\0') ? path : undefined;
  }
  if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) {
      const found = nulPath(item, `${path}[${i}]`, allowed);
      if (found !== undefined) return found;
    }
    return undefined;
  }
  if (typeof value === 'object' && value !== null) {
    for (const [key, item] of Object.entries(value)) {
      const at = `${path}.${key}`;
      if (key.includes('\0')) return at;
      const found = nulPath(item, at, allowed);
      if (found !== undefined) return found;
    }
  }
  return undefined;
}
