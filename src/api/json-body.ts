/** JSON request bodies: every body arrives as raw bytes (see server.ts); JSON routes parse here. */
import type { FastifyRequest } from 'fastify';
import { badRequest } from '../core/errors.js';

/**
 * The request body parsed as JSON, whatever its Content-Type (clients often send none).
 * @param whenEmpty the value of an empty body; without it an empty body is a 400.
 * @throws FerryError 400 for a missing or malformed body.
 */
export function jsonBody(request: FastifyRequest, whenEmpty?: () => unknown): unknown {
  const body = request.body;
  const empty = !(body instanceof Uint8Array) || Buffer.from(body).toString('utf8').trim() === '';
  if (empty) {
    if (whenEmpty) return whenEmpty();
    throw badRequest('missing request body: expected JSON');
  }
  try {
    return JSON.parse(Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8'));
  } catch (error) {
    throw badRequest(`invalid JSON body: ${(error as Error).message}`);
  }
}
