/**
 * Building blocks of the route schemas (TypeBox, i.e. JSON Schema). These objects are both the
 * validators Fastify runs on each request (see openapi.ts) and what `GET /v2/openapi.json` is
 * generated from, so the document cannot drift from the code.
 */
import { Type, type TSchema } from 'typebox';

/** Every error answer: `{"error": "..."}`. */
export const ErrorBody = Type.Object(
  { error: Type.String({ description: 'What was wrong, naming the field or setting' }) },
  { description: 'An error' },
);

const ERROR_MEANINGS: Record<number, string> = {
  400: 'Bad input (a malformed field, setting or parameter, named in `error`)',
  401: 'Missing or invalid credentials',
  403: 'Not allowed for this user',
  404: 'Not found',
  409: 'Conflict',
  412: "Over one of the plan's limits (`error` names it)",
  413: 'Request body larger than the limit',
  429: 'Rate limit, daily quota or budget reached (`RateLimit-*` headers say when to retry)',
};

/** `{status: ErrorBody}` for the given statuses, with a description each. */
export function errors(...statuses: number[]): Record<number, TSchema> {
  const out: Record<number, TSchema> = {};
  for (const status of statuses) {
    out[status] = Type.Object(
      { error: Type.String() },
      { description: ERROR_MEANINGS[status] ?? 'Error' },
    );
  }
  return out;
}

/** An optional query parameter that may be repeated or comma-joined (`label=a&label=b`, `label=a,b`). */
export const multi = (description: string) =>
  Type.Optional(Type.Array(Type.String(), { description }));

/** An optional integer query parameter from `min` to `max`. */
export const int = (description: string, min: number, max: number) =>
  Type.Optional(Type.Integer({ minimum: min, maximum: max, description }));

export const str = (description: string) => Type.Optional(Type.String({ description }));

/** A path parameter. */
export const pathParam = (name: string, description: string) =>
  Type.Object({ [name]: Type.String({ description }) });

/** Unix time in milliseconds. */
export const Millis = (description: string) => Type.Integer({ description });

/** A header map as answers show it: `{name: [values]}`. */
export const HeaderMapOut = Type.Record(Type.String(), Type.Array(Type.String()));

/** `{}` */
export const Empty = Type.Object({}, { description: 'Done' });

/** Security requirements: messaging token (header or `queue_token`/`qstash_token` query). */
export const MESSAGING_SECURITY: Record<string, string[]>[] = [
  { bearerToken: [] },
  { queueToken: [] },
  { qstashToken: [] },
];
/** Management credentials: HTTP Basic `email:api_key`. */
export const MANAGEMENT_SECURITY: Record<string, string[]>[] = [{ managementBasic: [] }];

/** A route's schema: Fastify's parts (validated) plus the OpenAPI operation's own fields. */
export interface RouteSchema {
  summary?: string;
  description?: string;
  tags?: string[];
  security?: Record<string, string[]>[];
  consumes?: string[];
  produces?: string[];
  hide?: boolean;
  params?: TSchema;
  querystring?: TSchema;
  headers?: TSchema;
  body?: TSchema;
  response?: Record<number, TSchema>;
}
