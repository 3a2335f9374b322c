/** Types of the management API as the SDK returns them (see docs/management.md). */
import type { SearchIndexRegion, SearchIndexType } from '../core/management.js';
import type { SearchIndexLimits } from '../core/search-index.js';
import type { AccountRegion, PlanName } from '../core/types.js';
import type { DataPoint } from '../core/usage-stats.js';

export type { SearchIndexLimits } from '../core/search-index.js';
export type { DataPoint, NamedSeries, UsageStats } from '../core/usage-stats.js';

export type { AccountRegion, PlanName } from '../core/types.js';
export type { SearchIndexRegion, SearchIndexType } from '../core/management.js';
export type { StatsPeriod } from '../core/usage-stats.js';

/**
 * A messaging account. `password` and `token` are set only in the answers that create them
 * (create, token reset); elsewhere they are `""` (Ferry stores only a hash).
 */
export interface MessagingAccount {
  customer_id: string;
  id: string;
  password: string;
  token: string;
  active: boolean;
  state: string;
  modifying_state: string;
  /** Unix seconds; 0 when the plan never changed. */
  last_plan_upgrade_time: number;
  max_message_size: number;
  max_requests_per_day: number;
  max_requests_per_day_hard: number;
  max_endpoints_per_topic: number;
  max_requests_per_second: number;
  max_dlq_size: number;
  max_completion_tokens_per_day: number;
  max_completion_tokens_per_minute: number;
  max_completions_per_day: number;
  max_completions_per_minute: number;
  max_retries: number;
  max_topics: number;
  max_schedules: number;
  max_events_size: number;
  max_dlq_retention_time_milis: number;
  max_delay: number;
  max_parallelism: number;
  max_global_parallelism: number;
  max_queues: number;
  retention: number;
  timeout: number;
  rate_limit: number;
  type: PlanName;
  reserved_type?: string;
  reserved_price: number;
  prod_pack_enabled: boolean;
  /** The text `"true"` or `"false"`. */
  metrics_enabled: 'true' | 'false';
  enterprise?: { enabled: boolean };
  region: AccountRegion;
  /** Dollars per month; 0 = no limit. */
  budget: number;
  created_by: string;
  /** Unix seconds. */
  creation_time: number;
}

/** A search index record; tokens are set only in the answers that create them. */
export interface SearchIndex extends SearchIndexLimits {
  customer_id: string;
  id: string;
  name: string;
  endpoint: string;
  type: SearchIndexType;
  region: SearchIndexRegion;
  partner_email: string;
  token: string;
  read_only_token: string;
  creation_time: number;
  input_enrichment_enabled: boolean;
  throughput_vector: DataPoint[];
}
