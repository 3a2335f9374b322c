/**
 * Schemas of the management API routes (src/api/mgmt/*.ts) and of the routes every server has
 * (`/health`, `/ready`, `/metrics`, `/v2/openapi.json`), keyed `"METHOD url"`.
 */
import { Type, type TSchema } from 'typebox';
import { SEARCH_INDEX_REGIONS, SEARCH_INDEX_TYPES } from '../../core/management.js';
import { PLAN_NAMES } from '../../core/plans.js';
import { ACCOUNT_REGIONS } from '../../core/types.js';
import { STATS_PERIODS } from '../../core/usage-stats.js';
import { INDEX_NAME } from '../../core/search-index.js';
import { MAX_BUDGET } from '../mgmt/accounts.js';
import { errors, MANAGEMENT_SECURITY, pathParam, type RouteSchema } from './common.js';

const opt = Type.Optional;
const I = () => Type.Integer();
const S = () => Type.String();

/** A body of named fields; any other field is a 400 naming it. */
const fields = (properties: Record<string, TSchema>, required = false) =>
  Type.Object(
    Object.fromEntries(Object.entries(properties).map(([k, v]) => [k, required ? v : opt(v)])),
    { additionalProperties: false },
  );

export const AccountOut = Type.Object(
  {
    customer_id: S(),
    id: S(),
    password: S(),
    token: Type.String({ description: 'The messaging token (Bearer)' }),
    active: Type.Boolean(),
    state: S(),
    modifying_state: S(),
    last_plan_upgrade_time: I(),
    max_message_size: I(),
    max_requests_per_day: I(),
    max_requests_per_day_hard: I(),
    max_endpoints_per_topic: I(),
    max_requests_per_second: I(),
    max_dlq_size: I(),
    max_completion_tokens_per_day: I(),
    max_completion_tokens_per_minute: I(),
    max_completions_per_day: I(),
    max_completions_per_minute: I(),
    max_retries: I(),
    max_topics: I(),
    max_schedules: I(),
    max_events_size: I(),
    max_dlq_retention_time_milis: I(),
    max_delay: I(),
    max_parallelism: I(),
    max_global_parallelism: I(),
    max_queues: I(),
    retention: I(),
    timeout: I(),
    rate_limit: I(),
    type: Type.Enum([...PLAN_NAMES]),
    reserved_price: Type.Number(),
    prod_pack_enabled: Type.Boolean(),
    metrics_enabled: S(),
    region: S(),
    budget: I(),
    created_by: S(),
    creation_time: Type.Integer({ description: 'Unix seconds' }),
  },
  { description: 'A messaging account ("QStash user")' },
);

const DataPoint = Type.Object({ x: S(), y: Type.Number() });
const NamedSeries = Type.Object({ id: S(), data_points: Type.Array(DataPoint) });

export const StatsOut = Type.Object(
  {
    days: Type.Array(S()),
    daily_requests: Type.Array(
      Type.Object({ x: S(), y: Type.Number(), workflow_message: I(), workflow_run: I() }),
    ),
    daily_billings: Type.Array(DataPoint),
    daily_bandwidths: Type.Array(DataPoint),
    daily_used: Type.Array(DataPoint),
    daily_used_workflow: Type.Array(DataPoint),
    daily_queue_messages: Type.Array(NamedSeries),
    daily_workflow_messages: Type.Array(NamedSeries),
    dlq_message_count: I(),
    daily_bandwidth_used: Type.Array(DataPoint),
    total_monthly_billing: Type.Number(),
  },
  { description: 'An account’s metered usage' },
);

export const SearchIndexOut = Type.Object(
  {
    customer_id: S(),
    id: S(),
    name: S(),
    endpoint: S(),
    type: Type.Enum([...SEARCH_INDEX_TYPES]),
    region: Type.Enum([...SEARCH_INDEX_REGIONS]),
    partner_email: S(),
    token: S(),
    read_only_token: S(),
    max_vector_count: I(),
    max_monthly_reranks: I(),
    max_daily_updates: I(),
    max_daily_queries: I(),
    max_monthly_bandwidth: I(),
    max_writes_per_second: I(),
    max_query_per_second: I(),
    max_reads_per_request: I(),
    creation_time: Type.Integer({ description: 'Unix seconds' }),
    input_enrichment_enabled: Type.Boolean(),
    throughput_vector: Type.Array(DataPoint),
  },
  { description: 'A search index' },
);

export function managementSchemas(): Record<string, RouteSchema> {
  const common = errors(400, 401);
  const idParam = pathParam('id', 'Account id');
  const indexParam = pathParam('id', 'Search-index id');
  const s: Record<string, RouteSchema> = {
    'POST /v2/queue': {
      summary: 'Create a messaging account',
      body: fields({
        region: Type.Enum([...ACCOUNT_REGIONS], { default: 'us-east-1' }),
        type: Type.Enum([...PLAN_NAMES], { default: 'free' }),
      }),
      response: { 200: AccountOut, ...common },
    },
    'GET /v2/queue': {
      summary: 'List your messaging accounts',
      response: { 200: Type.Array(AccountOut), ...common },
    },
    'GET /v2/queue/:id': {
      summary: 'Read an account',
      params: idParam,
      response: { 200: AccountOut, ...common, ...errors(404) },
    },
    'DELETE /v2/queue/:id': {
      summary: 'Delete an account',
      params: idParam,
      response: { 200: AccountOut, ...common, ...errors(404) },
    },
    'POST /v2/queue/set-plan/:id': {
      summary: 'Change an account’s plan',
      params: idParam,
      body: fields({ plan_name: Type.Enum([...PLAN_NAMES]) }, true),
      response: { 200: AccountOut, ...common, ...errors(404) },
    },
    'PATCH /v2/queue/update-budget/:id': {
      summary: 'Set an account’s monthly budget in dollars (0: no limit)',
      params: idParam,
      body: fields({ budget: Type.Integer({ minimum: 0, maximum: MAX_BUDGET }) }, true),
      response: { 200: AccountOut, ...common, ...errors(404) },
    },
    'POST /v2/queue/rotate-token/:id': {
      summary: 'New password and token for an account',
      params: idParam,
      body: fields({}),
      response: { 200: AccountOut, ...common, ...errors(404) },
    },
    'GET /v2/queue/stats/:id': {
      summary: 'An account’s metered usage',
      params: idParam,
      querystring: Type.Object({
        period: opt(Type.Enum(Object.keys(STATS_PERIODS), { default: '1h' })),
      }),
      response: { 200: StatsOut, ...common, ...errors(404) },
    },
    'POST /v2/search': {
      summary: 'Create a search index',
      body: fields({
        name: Type.String({ pattern: INDEX_NAME.source }),
        region: Type.Enum([...SEARCH_INDEX_REGIONS]),
        type: Type.Enum([...SEARCH_INDEX_TYPES]),
      }),
      response: { 200: SearchIndexOut, ...common },
    },
    'GET /v2/search': {
      summary: 'List your search indexes',
      response: { 200: Type.Array(SearchIndexOut), ...common },
    },
    'GET /v2/search/:id': {
      summary: 'Read a search index',
      params: indexParam,
      response: { 200: SearchIndexOut, ...common, ...errors(404) },
    },
    'DELETE /v2/search/:id': {
      summary: 'Delete a search index',
      params: indexParam,
      response: { 200: SearchIndexOut, ...common, ...errors(404) },
    },
    'POST /v2/search/:id/rename': {
      summary: 'Rename a search index',
      params: indexParam,
      body: fields({ name: Type.String({ pattern: INDEX_NAME.source }) }, true),
      response: { 200: SearchIndexOut, ...common, ...errors(404) },
    },
    'POST /v2/search/:id/reset-password': {
      summary: 'New tokens for a search index',
      params: indexParam,
      body: fields({}),
      response: { 200: SearchIndexOut, ...common, ...errors(404) },
    },
    'POST /v2/admin/users': {
      summary: 'Create a management user (administrators)',
      body: fields({ email: Type.String({ maxLength: 254 }) }, true),
      response: {
        200: Type.Object({
          email: S(),
          api_key: Type.String({ description: 'Shown once' }),
        }),
        ...common,
        ...errors(403, 409),
      },
    },
    'POST /v2/admin/backup': {
      summary: 'A consistent copy of the SQLite database (administrators)',
      produces: ['application/vnd.sqlite3'],
      response: {
        200: Type.Unknown({ description: 'The SQLite database file' }),
        ...common,
        ...errors(403),
      },
    },
  };
  for (const schema of Object.values(s)) {
    schema.tags = ['Management'];
    schema.security = MANAGEMENT_SECURITY;
  }
  return s;
}

export function opsSchemas(): Record<string, RouteSchema> {
  const tags = ['Operations'];
  return {
    'GET /health': {
      tags,
      summary: 'Liveness check',
      security: [],
      response: { 200: Type.Object({ status: Type.Literal('ok') }) },
    },
    'GET /ready': {
      tags,
      summary: 'Readiness: storage answers and migrations are applied',
      security: [],
      response: {
        200: Type.Object({ status: Type.Literal('ready') }),
        503: Type.Object({ status: Type.Literal('unavailable'), error: S() }),
      },
    },
    'GET /metrics': {
      tags,
      summary: 'Prometheus metrics (text format)',
      security: [{}, { metricsToken: [] }],
      produces: ['text/plain'],
      response: {
        200: Type.String({ description: 'Prometheus text exposition format' }),
        ...errors(401),
      },
    },
    'GET /v2/openapi.json': {
      tags,
      summary: 'This document',
      security: [],
      response: { 200: Type.Object({}, { description: 'An OpenAPI 3.1 document' }) },
    },
  };
}
