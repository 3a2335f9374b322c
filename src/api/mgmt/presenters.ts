/**
 * The account and search index objects of `interface.md`, with every field and its stated type.
 * `password`/`token` (and the index tokens) are read back from their sealed copies (secrets.ts);
 * "" where none can be (a row from before the secret key, until its credentials are reset).
 */
import type { ManagementUser, SearchIndex } from '../../core/management.js';
import type { PlanLimits } from '../../core/plans.js';
import { searchIndexLimits } from '../../core/search-index.js';
import type { Account } from '../../core/types.js';
import type { DataPoint } from '../../core/usage-stats.js';

const seconds = (ms: number): number => Math.floor(ms / 1000);

export function accountJson(p: {
  account: Account;
  owner: ManagementUser;
  limits: PlanLimits;
  eventRetentionMs: number;
  /** The account's password and token ("" when they cannot be read back). */
  credentials: { password: string; token: string };
}): Record<string, unknown> {
  const { account, limits } = p;
  return {
    customer_id: p.owner.email,
    id: account.id,
    password: p.credentials.password,
    token: p.credentials.token,
    active: true,
    state: 'active',
    modifying_state: '',
    last_plan_upgrade_time:
      account.planChangedAt === undefined ? 0 : seconds(account.planChangedAt),
    max_message_size: limits.max_message_size,
    max_requests_per_day: limits.max_requests_per_day,
    max_requests_per_day_hard: limits.max_requests_per_day_hard,
    max_endpoints_per_topic: limits.max_endpoints_per_topic,
    max_requests_per_second: limits.max_requests_per_second,
    max_dlq_size: limits.max_dlq_size,
    // Ferry offers no LLM completions: these limits are 0 (none offered).
    max_completion_tokens_per_day: 0,
    max_completion_tokens_per_minute: 0,
    max_completions_per_day: 0,
    max_completions_per_minute: 0,
    max_retries: limits.max_retries,
    max_topics: limits.max_topics,
    max_schedules: limits.max_schedules,
    // The events log is bounded by time (`retention`), not by size: 0 = no size limit.
    max_events_size: 0,
    max_dlq_retention_time_milis: limits.max_dlq_retention_time_milis,
    max_delay: limits.max_delay,
    max_parallelism: limits.max_parallelism,
    max_global_parallelism: limits.max_global_parallelism,
    max_queues: limits.max_queues,
    retention: p.eventRetentionMs,
    timeout: limits.timeout,
    rate_limit: limits.max_requests_per_second,
    type: account.plan,
    reserved_price: 0,
    prod_pack_enabled: false,
    // Every account is metered; its statistics are served by GET /v2/queue/stats/{id}.
    metrics_enabled: 'true',
    region: account.region ?? 'us-east-1',
    budget: account.budget ?? 0,
    created_by: p.owner.email,
    creation_time: seconds(account.createdAt),
  };
}

export function searchIndexJson(p: {
  index: SearchIndex;
  owner: ManagementUser;
  throughput: DataPoint[];
  /** The index's tokens ("" when they cannot be read back). */
  tokens: { token: string; readOnlyToken: string };
}): Record<string, unknown> {
  const { index } = p;
  return {
    customer_id: p.owner.email,
    id: index.id,
    name: index.name,
    endpoint: index.endpoint,
    type: index.type,
    region: index.region,
    partner_email: '',
    token: p.tokens.token,
    read_only_token: p.tokens.readOnlyToken,
    ...searchIndexLimits(index.type),
    creation_time: seconds(index.createdAt),
    input_enrichment_enabled: false,
    throughput_vector: p.throughput,
  };
}
