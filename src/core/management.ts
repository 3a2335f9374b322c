/**
 * Domain types of the management API: management users, search index records and metered usage.
 * Pure data, like `types.ts`. Times are Unix ms.
 */

/** A user of the management API (`Authorization: Basic base64(email:api_key)`). */
export interface ManagementUser {
  id: string;
  email: string;
  /** SHA-256 hex of the API key; the key itself is shown once, at creation. */
  apiKeyHash: string;
  /** Administrators may create other users. */
  admin: boolean;
  createdAt: number;
}

export type SearchIndexType = 'free' | 'payg' | 'fixed';
export const SEARCH_INDEX_TYPES: readonly SearchIndexType[] = ['free', 'payg', 'fixed'];

export type SearchIndexRegion = 'eu-west-1' | 'us-central1';
export const SEARCH_INDEX_REGIONS: readonly SearchIndexRegion[] = ['eu-west-1', 'us-central1'];

/** The account-side record of a search index (Ferry runs no vector database itself). */
export interface SearchIndex {
  id: string;
  /** The owning management user. */
  ownerId: string;
  name: string;
  /** REST endpoint name, unique: the name plus a random suffix. */
  endpoint: string;
  type: SearchIndexType;
  region: SearchIndexRegion;
  /** SHA-256 hex of the read-write token. */
  tokenHash: string;
  /** SHA-256 hex of the read-only token. */
  readOnlyTokenHash: string;
  /**
   * Both tokens sealed with Ferry's secret key (core/secret-box.ts), so the owner can read them
   * again; absent for an index from before the secret key (only the hashes were kept).
   */
  tokenSealed?: string;
  readOnlyTokenSealed?: string;
  createdAt: number;
}

/**
 * Metered quantities. Counts are messages or requests, `bandwidth` is bytes. Search index
 * subjects record `index_requests`; account subjects the rest.
 */
export type UsageMetric =
  | 'messages'
  | 'delivered'
  | 'retried'
  | 'failed'
  | 'canceled'
  | 'bandwidth'
  | 'workflow_message'
  | 'workflow_run'
  | 'workflow_delivered'
  | 'workflow_canceled'
  | 'index_requests';

/** One counter increment: `value` more of `metric` for `subjectId` in the minute starting at `minute`. */
export interface UsageCount {
  /** An account id or a search index id. */
  subjectId: string;
  /** Start of the minute, Unix ms (a multiple of 60,000). */
  minute: number;
  metric: UsageMetric;
  value: number;
}

/** A sum of one metric over one step of a series (see `usageSumByStep`). */
export interface UsageBucket {
  /** Index of the step: 0 for `[from, from + stepMs)`. */
  bucket: number;
  metric: UsageMetric;
  value: number;
}

/**
 * Where the publish and delivery paths report usage (`maintenance/usage-meter.ts`). Must not
 * block or throw: it only counts in memory.
 */
export interface UsageRecorder {
  add(subjectId: string, metric: UsageMetric, value: number, at?: number): void;
}
