/** Every route's schema, keyed `"METHOD url"` as Fastify registers the route. */
import type { RouteSchema } from './common.js';
import { managementSchemas, opsSchemas } from './management.js';
import { messagingSchemas } from './messaging.js';

export type { RouteSchema } from './common.js';

/** The schemas of every Ferry route for header prefix `prefix`. */
export function routeSchemas(prefix: string): Map<string, RouteSchema> {
  return new Map(
    Object.entries({ ...messagingSchemas(prefix), ...managementSchemas(), ...opsSchemas() }),
  );
}
