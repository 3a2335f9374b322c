/**
 * `GET /metrics`: the Prometheus text format. Open by default (like most exporters, it is meant
 * for a private network); with a token (`--metrics-token`) it requires
 * `Authorization: Bearer <token>`, compared in constant time.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';

export interface MetricsEndpoint {
  scrape(): Promise<string>;
  readonly contentType: string;
  /** Required bearer token; absent = open. */
  token?: string;
}

const digest = (text: string): Buffer => createHash('sha256').update(text).digest();

export function metricsRoute(app: FastifyInstance, endpoint: MetricsEndpoint): void {
  const expected = endpoint.token === undefined ? undefined : digest(endpoint.token);
  app.get('/metrics', async (request, reply) => {
    if (expected) {
      const header = request.headers.authorization ?? '';
      const given = header.startsWith('Bearer ') ? header.slice('Bearer '.length) : '';
      // Digests of equal length, so the comparison time does not depend on the token.
      if (!timingSafeEqual(digest(given), expected)) {
        return reply
          .code(401)
          .header('www-authenticate', 'Bearer')
          .send({ error: 'GET /metrics needs Authorization: Bearer <metrics token>' });
      }
    }
    const text = await endpoint.scrape();
    return reply.header('content-type', endpoint.contentType).send(text);
  });
}
