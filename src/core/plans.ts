import type { PlanName } from './types.js';

/**
 * Limits of a plan, named as the account fields of `interface.md`. Sizes are bytes, `max_delay`
 * and `timeout` are seconds, retention is ms. A value of 0 means "no limit" where API.md says so
 * (the daily request quotas).
 */
export interface PlanLimits {
  max_message_size: number;
  max_requests_per_day: number;
  max_requests_per_day_hard: number;
  max_requests_per_second: number;
  /** The cap on `Svc-Retries`. */
  max_retries: number;
  /** Retries when `Svc-Retries` is absent. */
  default_retries: number;
  max_delay: number;
  timeout: number;
  max_topics: number;
  max_endpoints_per_topic: number;
  max_schedules: number;
  max_queues: number;
  max_parallelism: number;
  max_global_parallelism: number;
  max_dlq_size: number;
  max_dlq_retention_time_milis: number;
  /**
   * Dollars per 100,000 messages created (retries are not extra messages; callbacks are). Billing
   * in the usage statistics and the `budget` check use it. May be fractional.
   */
  price_per_100k_messages: number;
}

const DAY_MS = 86_400_000;

/** The defaults of API.md "Limits". Configuration may override any field per plan. */
export const DEFAULT_PLANS: Readonly<Record<PlanName, Readonly<PlanLimits>>> = {
  free: {
    max_message_size: 1024 * 1024,
    max_requests_per_day: 1_000,
    max_requests_per_day_hard: 1_500,
    max_requests_per_second: 100,
    max_retries: 3,
    default_retries: 3,
    max_delay: 7 * 86_400,
    timeout: 900,
    max_topics: 10,
    max_endpoints_per_topic: 100,
    max_schedules: 10,
    max_queues: 10,
    max_parallelism: 10,
    max_global_parallelism: 100,
    max_dlq_size: 1_000,
    max_dlq_retention_time_milis: 3 * DAY_MS,
    price_per_100k_messages: 0,
  },
  paid: {
    max_message_size: 10 * 1024 * 1024,
    max_requests_per_day: 0,
    max_requests_per_day_hard: 0,
    max_requests_per_second: 1_000,
    max_retries: 20,
    default_retries: 5,
    max_delay: 365 * 86_400,
    timeout: 7_200,
    max_topics: 1_000,
    max_endpoints_per_topic: 1_000,
    max_schedules: 1_000,
    max_queues: 100,
    max_parallelism: 100,
    max_global_parallelism: 1_000,
    max_dlq_size: 100_000,
    max_dlq_retention_time_milis: 7 * DAY_MS,
    price_per_100k_messages: 1,
  },
};

export type PlanTable = Record<PlanName, PlanLimits>;

export const PLAN_NAMES: readonly PlanName[] = ['free', 'paid'];

export function isPlanName(value: string): value is PlanName {
  return (PLAN_NAMES as readonly string[]).includes(value);
}

/**
 * Builds the plan table from the defaults and partial overrides (`{"free": {"max_retries": 5}}`),
 * rejecting unknown plans, unknown fields and values that are not non-negative integers (the
 * price: non-negative numbers).
 */
export function resolvePlans(overrides: unknown): PlanTable {
  const plans: PlanTable = { free: { ...DEFAULT_PLANS.free }, paid: { ...DEFAULT_PLANS.paid } };
  if (overrides === undefined || overrides === null) return plans;
  if (typeof overrides !== 'object' || Array.isArray(overrides)) {
    throw new Error('plans must be an object like {"free": {"max_retries": 5}}');
  }
  for (const [plan, fields] of Object.entries(overrides as Record<string, unknown>)) {
    if (!isPlanName(plan)) throw new Error(`unknown plan "${plan}" (known: free, paid)`);
    if (typeof fields !== 'object' || fields === null || Array.isArray(fields)) {
      throw new Error(`plans.${plan} must be an object of limits`);
    }
    for (const [field, value] of Object.entries(fields as Record<string, unknown>)) {
      if (!(field in plans[plan])) throw new Error(`unknown limit "plans.${plan}.${field}"`);
      // A price may be fractional ($0.4 per 100,000); every limit is a whole count.
      const fractional = field === 'price_per_100k_messages';
      if (
        typeof value !== 'number' ||
        !Number.isFinite(value) ||
        (!fractional && !Number.isInteger(value)) ||
        value < 0
      ) {
        throw new Error(
          `plans.${plan}.${field} must be a non-negative ${fractional ? 'number' : 'integer'}`,
        );
      }
      plans[plan][field as keyof PlanLimits] = value;
    }
  }
  return plans;
}
