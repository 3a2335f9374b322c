/**
 * Search index rules, pure: the limits of each index type (-1 = unlimited) and the validation of
 * index names. Ferry keeps the account-side record of an index; it runs no vector database.
 */
import { badRequest } from './errors.js';
import type { SearchIndexType } from './management.js';

export interface SearchIndexLimits {
  max_vector_count: number;
  /** -1 = unlimited. */
  max_monthly_reranks: number;
  /** -1 = unlimited. */
  max_daily_updates: number;
  /** -1 = unlimited. */
  max_daily_queries: number;
  /** Bytes; -1 = unlimited. */
  max_monthly_bandwidth: number;
  max_writes_per_second: number;
  max_query_per_second: number;
  max_reads_per_request: number;
  max_writes_per_request: number;
}

const GIB = 1024 ** 3;

/** Limits by index type (documented in docs/management.md). */
export const SEARCH_INDEX_LIMITS: Readonly<Record<SearchIndexType, Readonly<SearchIndexLimits>>> = {
  free: {
    max_vector_count: 10_000,
    max_monthly_reranks: 100,
    max_daily_updates: 10_000,
    max_daily_queries: 10_000,
    max_monthly_bandwidth: 50 * GIB,
    max_writes_per_second: 1_000,
    max_query_per_second: 1_000,
    max_reads_per_request: 1_000,
    max_writes_per_request: 1_000,
  },
  payg: {
    max_vector_count: 100_000_000,
    max_monthly_reranks: -1,
    max_daily_updates: -1,
    max_daily_queries: -1,
    max_monthly_bandwidth: -1,
    max_writes_per_second: 1_000,
    max_query_per_second: 1_000,
    max_reads_per_request: 1_000,
    max_writes_per_request: 1_000,
  },
  fixed: {
    max_vector_count: 1_000_000_000,
    max_monthly_reranks: -1,
    max_daily_updates: -1,
    max_daily_queries: -1,
    max_monthly_bandwidth: -1,
    max_writes_per_second: 10_000,
    max_query_per_second: 10_000,
    max_reads_per_request: 10_000,
    max_writes_per_request: 10_000,
  },
};

export function searchIndexLimits(type: SearchIndexType): SearchIndexLimits {
  return { ...SEARCH_INDEX_LIMITS[type] };
}

export const INDEX_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;

/** An index name: 1–64 letters, digits, `-` and `_`, starting with a letter or digit. */
export function parseIndexName(value: unknown): string {
  if (typeof value !== 'string' || !INDEX_NAME.test(value)) {
    throw badRequest(
      `name must be 1 to 64 letters, digits, "-" or "_" starting with a letter or digit, got ${JSON.stringify(value) ?? 'nothing'}`,
    );
  }
  return value;
}
