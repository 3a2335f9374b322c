/**
 * Route schemas, request validation and `GET /v2/openapi.json`.
 *
 * Every route gets its schema from `schemas/` (an `onRoute` hook looks it up by method and URL,
 * so the route modules stay as they are). The same schema objects are the request validators
 * (ajv, JSON Schema 2020-12) and the source of the OpenAPI 3.1 document (@fastify/swagger): the
 * document cannot drift from what the routes accept.
 *
 * Validation keeps Ferry's conventions:
 * - Bodies arrive as raw bytes (server.ts) and handlers read them as they are (publish passes
 *   them through byte for byte). A JSON body schema is checked against the parsed JSON of those
 *   bytes; `request.body` is left untouched. An empty or malformed body is left to the handler,
 *   which answers its own "missing" / "invalid JSON" 400.
 * - Query, path and header values are validated on a copy (with types coerced from text, and an
 *   empty query value meaning absent, as Ferry's query parsers read them): `request.query` and
 *   `request.params` stay the strings they were.
 * - A failure is a 400 `{"error": "<field>: <message>"}` (a FerryError, see errors.ts).
 * - Answers are serialized with JSON.stringify, not fast-json-stringify: a response schema
 *   documents the answer and never drops a field from it.
 */
import swagger from '@fastify/swagger';
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import type { FastifyInstance } from 'fastify';
import { badRequest } from '../core/errors.js';
import { routeSchemas, type RouteSchema } from './schemas/index.js';

/** Where the document is served. */
export const OPENAPI_PATH = '/v2/openapi.json';

/** A route of the server, as registered (`HEAD` routes Fastify adds are left out). */
export interface RegisteredRoute {
  method: string;
  url: string;
  /** A schema was found for it in `schemas/`. */
  documented: boolean;
}

const REGISTERED = new WeakMap<FastifyInstance, RegisteredRoute[]>();

/** The routes of a server built with {@link installOpenApi}, as its `onRoute` hook saw them. */
export function registeredRoutes(app: FastifyInstance): RegisteredRoute[] {
  return REGISTERED.get(app) ?? [];
}

type Part = 'body' | 'querystring' | 'params' | 'headers';

const PART_NAMES: Record<Exclude<Part, 'body'>, string> = {
  querystring: 'query parameter',
  params: 'path parameter',
  headers: 'header',
};

/**
 * An ajv compiler that compiles a schema at its first use, and each distinct schema once per
 * process. Compiling every route's schemas took ~250 ms of a ~300 ms server start (measured with
 * `--cpu-prof`), for every server a process starts (the tests start hundreds): now a start
 * compiles nothing and a route's first request compiles its own. The largest, the publish
 * headers, takes ~55 ms as a process's first compile (~30 ms once ajv has run): the first publish
 * after a start answered in 117–165 ms against 45–69 ms before (3 starts each). Every server builds
 * its schemas afresh (`routeSchemas(prefix)`) and ajv caches by object, so the cache is keyed by
 * the schema's JSON: equal text is an equal schema.
 */
function compilerOf(ajv: Ajv2020): (schema: Record<string, unknown>) => () => ValidateFunction {
  const checks = new Map<string, ValidateFunction>();
  return (schema) => {
    let check: ValidateFunction | undefined;
    return () => {
      if (check) return check;
      const key = JSON.stringify(schema);
      check = checks.get(key) ?? ajv.compile(schema);
      checks.set(key, check);
      return check;
    };
  };
}

/** Query, path and header values are text: coerce to the schema's types, on a copy. */
export const TEXT_AJV_OPTIONS = { strict: false, coerceTypes: 'array', verbose: true } as const;
/** JSON bodies are typed already: no coercion. */
export const JSON_AJV_OPTIONS = { strict: false, verbose: true } as const;
const compileText = compilerOf(new Ajv2020(TEXT_AJV_OPTIONS));
const compileJson = compilerOf(new Ajv2020(JSON_AJV_OPTIONS));

/** `/1/destination` → ["1", "destination"]. */
const segments = (pointer: string): string[] =>
  pointer === ''
    ? []
    : pointer
        .slice(1)
        .split('/')
        .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));

/**
 * The field an error is about, named as the user wrote it: `query parameter "count"`,
 * `body.parallelism`, `entry 2.destination` (an item of an array body: the batch's entries).
 */
function fieldOf(part: Part, pointer: string, bodyIsArray: boolean): string {
  const path = segments(pointer);
  if (part !== 'body') {
    const [name, ...rest] = path;
    return name === undefined
      ? PART_NAMES[part]
      : `${PART_NAMES[part]} "${[name, ...rest].join('.')}"`;
  }
  if (bodyIsArray && path.length > 0) return [`entry ${path[0]}`, ...path.slice(1)].join('.');
  return ['body', ...path].join('.');
}

/** One ajv error as Ferry's message: `<field>: <what is wrong>`. */
export function errorMessage(part: Part, error: ErrorObject, bodyIsArray = false): string {
  const where = fieldOf(part, error.instancePath, bodyIsArray);
  const params = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case 'required':
      return `${where}: "${String(params.missingProperty)}" is required`;
    case 'additionalProperties': {
      const known = Object.keys(
        (error.parentSchema as { properties?: object } | undefined)?.properties ?? {},
      );
      return `${where}: unknown field "${String(params.additionalProperty)}" (allowed: ${known.length > 0 ? known.join(', ') : 'none'})`;
    }
    case 'enum':
      return `${where}: must be one of ${(params.allowedValues as unknown[]).join(', ')}, got ${JSON.stringify(error.data) ?? 'nothing'}`;
    default:
      return `${where}: ${error.message ?? 'is invalid'}`;
  }
}

/** A schema with no JSON type: a raw body (any bytes), not validated as JSON. */
function isRawBody(schema: Record<string, unknown>): boolean {
  return !['type', 'anyOf', 'oneOf', 'allOf', 'properties', 'items', 'enum', 'const'].some(
    (k) => k in schema,
  );
}

/** The body's JSON, or undefined when there is none or it is not JSON (the handler says so). */
function parsedBody(data: unknown): { value: unknown } | undefined {
  if (!(data instanceof Uint8Array)) return undefined;
  const text = Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('utf8');
  if (text.trim() === '') return undefined;
  try {
    return { value: JSON.parse(text) as unknown };
  } catch {
    return undefined;
  }
}

type Validator = (data: unknown) => boolean | { error: Error };

function compileValidator(schema: Record<string, unknown>, part: Part, url: string): Validator {
  if (part === 'body') {
    if (isRawBody(schema)) return () => true;
    const compiled = compileJson(schema);
    const bodyIsArray = schema.type === 'array';
    return (data) => {
      const body = parsedBody(data);
      if (!body) return true;
      const check = compiled();
      return check(body.value) ? true : failure(check, part, bodyIsArray);
    };
  }
  if (part !== 'querystring' && acceptsAnyText(schema, part === 'params')) return () => true;
  const compiled = compileText(schema);
  const wildcard = url.endsWith('*');
  return (data) => {
    const copy: Record<string, unknown> = {};
    for (const [key, value] of Object.entries((data ?? {}) as Record<string, unknown>)) {
      // `?count=` means no count to Ferry's query parsers.
      if (part === 'querystring' && value === '') continue;
      copy[key] = value;
    }
    // A `…/*` route's wildcard is documented as its `{destination}` path parameter.
    if (part === 'params' && wildcard) copy.destination = copy['*'];
    const check = compiled();
    return check(copy) ? true : failure(check, part, false);
  };
}

/** Keywords that describe a value without constraining it. */
const ANNOTATIONS = new Set(['type', 'description', 'title', 'examples', 'deprecated']);

/**
 * True when `schema` accepts every map of header or path values: an object of plain strings,
 * none required (a route's path parameters, `pathParams`, are always there), no other property
 * refused. Header values and path parameters always arrive as strings (Node joins a repeated
 * request header with ", "), so validating them against such a schema cannot fail, and is
 * skipped: on `POST /v2/publish/*` (documented headers and `{destination}`) the copy and the
 * check cost about 3 µs per publish, measured in a CPU profile. Query strings are still checked:
 * a parameter may come as several values.
 */
export function acceptsAnyText(schema: Record<string, unknown>, pathParams: boolean): boolean {
  if (schema.type !== 'object') return false;
  const extra = Object.keys(schema).filter((k) => !['properties', 'required'].includes(k));
  if (extra.some((k) => !ANNOTATIONS.has(k))) return false;
  const required = Array.isArray(schema.required) ? schema.required : [];
  if (!pathParams && required.length > 0) return false;
  const properties = (schema.properties ?? {}) as Record<string, Record<string, unknown>>;
  return Object.values(properties).every(
    (property) =>
      property.type === 'string' && Object.keys(property).every((k) => ANNOTATIONS.has(k)),
  );
}

function failure(check: ValidateFunction, part: Part, bodyIsArray: boolean): { error: Error } {
  const [first] = check.errors ?? [];
  return {
    error: badRequest(first ? errorMessage(part, first, bodyIsArray) : `invalid ${part}`),
  };
}

/** What a server's document describes. */
export interface ApiDescription {
  /** The header prefix (`Svc`): the document shows the headers under it. */
  prefix: string;
  /** Whether the server serves the messaging API, and the management API. */
  messaging: boolean;
  management: boolean;
}

/** The document's opening line: the APIs this server serves, not the ones another port serves. */
function describeApis({ prefix, messaging, management }: ApiDescription): string {
  const errors = 'Errors are `{"error": "..."}`.';
  const settings = `Publish settings are headers named \`${prefix}-…\` on this server.`;
  if (messaging && management) {
    return `Ferry's messaging API (Bearer token) and management API (Basic credentials). ${errors} ${settings}`;
  }
  if (messaging) {
    return `Ferry's messaging API (Bearer token); the management API is served on a port of its own (--mgmt-port). ${errors} ${settings}`;
  }
  if (management) {
    return `Ferry's management API (Basic credentials); the messaging API is served on the main port. ${errors}`;
  }
  return `Ferry's health, readiness and metrics endpoints. ${errors}`;
}

/**
 * Installs schemas, validation and serialization on `app`, and registers @fastify/swagger. Call
 * before any route is added, and add routes in a plugin registered after this (swagger collects
 * routes as they are added).
 */
export function installOpenApi(app: FastifyInstance, api: ApiDescription): void {
  const { prefix } = api;
  const schemas = routeSchemas(prefix);
  const registered: RegisteredRoute[] = [];
  REGISTERED.set(app, registered);
  app.addHook('onRoute', (route) => {
    const methods = (Array.isArray(route.method) ? route.method : [route.method]).filter(
      (m) => m !== 'HEAD',
    );
    if (methods.length === 0) return;
    for (const method of methods) {
      const schema = schemas.get(`${method} ${route.url}`);
      registered.push({ method, url: route.url, documented: schema !== undefined });
      if (schema && route.schema === undefined) route.schema = schema;
    }
    // The console's pages and assets are not API (their routes carry no schema).
    if (route.url.startsWith('/console')) route.schema = { ...route.schema, hide: true };
  });
  app.setValidatorCompiler(({ schema, httpPart, url }) =>
    compileValidator(schema as Record<string, unknown>, httpPart as Part, url),
  );
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));

  void app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Ferry',
        version: '2',
        description: describeApis(api),
      },
      components: {
        securitySchemes: {
          bearerToken: {
            type: 'http',
            scheme: 'bearer',
            description: 'The account token: `Authorization: Bearer <token>`',
          },
          queueToken: {
            type: 'apiKey',
            in: 'query',
            name: 'queue_token',
            description:
              'The account token as a query parameter, for webhook senders that cannot set headers',
          },
          qstashToken: {
            type: 'apiKey',
            in: 'query',
            name: 'qstash_token',
            description: 'Alias of `queue_token`',
          },
          managementBasic: {
            type: 'http',
            scheme: 'basic',
            description: 'Management API: `Authorization: Basic base64(email:api_key)`',
          },
          metricsToken: {
            type: 'http',
            scheme: 'bearer',
            description: '`--metrics-token`, when set',
          },
        },
        schemas: {
          Error: {
            type: 'object',
            required: ['error'],
            properties: { error: { type: 'string' } },
            description: 'Every error answer (4xx, 5xx)',
          },
        },
      },
    },
    transformObject: (documentObject) =>
      'openapiObject' in documentObject
        ? optionalBodies(documentObject.openapiObject)
        : documentObject.swaggerObject,
    // `…/*` routes take a destination URL (with its slashes) as their last path segment.
    transform: ({ schema, url }) => ({
      schema: schema,
      url: url.endsWith('*') ? `${url.slice(0, -1)}:destination` : url,
    }),
  });
}

interface DocOperation {
  requestBody?: {
    required?: boolean;
    content?: Record<string, { schema?: { required?: unknown } }>;
  };
  security?: Record<string, unknown>[];
}

/**
 * @fastify/swagger marks every request body required. Ferry's are not all: a raw body (publish,
 * schedules, notify) may be empty, and so may a management body none of whose fields is
 * required (an empty body reads as `{}`).
 */
function optionalBodies<T extends { paths?: object }>(doc: T): T {
  for (const operations of Object.values(doc.paths ?? {}) as Record<string, DocOperation>[]) {
    for (const op of Object.values(operations)) {
      const body = op.requestBody;
      if (!body?.content) continue;
      const raw = '*/*' in body.content;
      const json = body.content['application/json']?.schema;
      const management = op.security?.some((s) => 'managementBasic' in s) ?? false;
      if (raw || (management && json && json.required === undefined)) body.required = false;
    }
  }
  return doc;
}

/** Serves the document, generated once on first request. */
export function openApiRoute(app: FastifyInstance): void {
  let json: string | undefined;
  app.get(OPENAPI_PATH, (_request, reply) => {
    json ??= JSON.stringify(app.swagger());
    return reply.type('application/json; charset=utf-8').send(json);
  });
}

export type { RouteSchema };
