/** JSON request bodies: every body arrives as raw bytes (see server.ts); JSON routes parse here. */
import type { FastifyRequest } from 'fastify';
import { badRequest } from '../core/errors.js';

/**
 * The request body parsed as JSON, whatever its Content-Type (clients often send none).
 * @throws FerryError 400 for a missing or malformed body.
 */
export function jsonBody(request: FastifyRequest): unknown {
  const body = request.body;
  if (!(body instanceof Uint8Array) || body.byteLength === 0) {
    throw badRequest('missing request body: expected JSON');
  }
  try {
    return JSON.parse(Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8'));
  } catch (error) {
    throw badRequest(`invalid JSON body: ${(error as Error).message}`);
  }
}
