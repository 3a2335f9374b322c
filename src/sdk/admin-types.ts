/** Types of the management API as the SDK returns them (see docs/management.md). */

export type PlanName = 'free' | 'paid';
export type AccountRegion = 'eu-central-1' | 'us-east-1';
export type SearchIndexType = 'free' | 'payg' | 'fixed';
export type SearchIndexRegion = 'eu-west-1' | 'us-central1';
export type StatsPeriod = '1h' | '3h' | '12h' | '1d' | '3d' | '7d' | '30d';

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

export interface DataPoint {
  /** `YYYY-MM-DD HH:MM:SS +0000 UTC`. */
  x: string;
  y: number;
}

export interface UsageStats {
  days: string[];
  daily_requests: (DataPoint & { workflow_message: number; workflow_run: number })[];
  daily_billings: DataPoint[];
  daily_bandwidths: DataPoint[];
  daily_used: DataPoint[];
  daily_used_workflow: DataPoint[];
  daily_queue_messages: { id: string; data_points: DataPoint[] }[];
  daily_workflow_messages: { id: string; data_points: DataPoint[] }[];
  dlq_message_count: number;
  daily_bandwidth_used: DataPoint[];
  total_monthly_billing: number;
}

/** A search index record; tokens are set only in the answers that create them. */
export interface SearchIndex {
  customer_id: string;
  id: string;
  name: string;
  endpoint: string;
  type: SearchIndexType;
  region: SearchIndexRegion;
  partner_email: string;
  token: string;
  read_only_token: string;
  max_vector_count: number;
  max_monthly_reranks: number;
  max_daily_updates: number;
  max_daily_queries: number;
  max_monthly_bandwidth: number;
  max_writes_per_second: number;
  max_query_per_second: number;
  max_reads_per_request: number;
  max_writes_per_request: number;
  creation_time: number;
  input_enrichment_enabled: boolean;
  throughput_vector: DataPoint[];
}
