/**
 * Builds the WHERE clause of a `RecordFilter` for both SQL drivers. The dialects differ only in
 * placeholders (`?` in SQLite, `$n` in PostgreSQL), so the caller passes a `bind` function that
 * records a value and returns its placeholder.
 *
 * Semantics: OR within a field, AND across fields; an empty array is "no filter on this field".
 */
import type { RecordFilter } from '../driver.js';

/** Which column holds each filterable field in a table; absent = the table has no such field. */
export interface FilterColumns {
  messageId?: string;
  dlqId?: string;
  state?: string;
  responseStatus?: string;
  workflowRunId?: string;
  /** The time column `fromDate`/`toDate` apply to. */
  time: string;
}

/** The messages' columns. */
export const MESSAGE_FILTER: FilterColumns = {
  messageId: 'id',
  workflowRunId: 'workflow_run_id',
  time: 'created_at',
};

/** The events' own columns. */
export const EVENT_FILTER: FilterColumns = {
  messageId: 'message_id',
  state: 'state',
  responseStatus: 'response_status',
  time: 'time',
};

/** The ACTIVE events that outcome rows carry (`active_at`): their state, time and no response. */
export const ACTIVE_EVENT_FILTER: FilterColumns = {
  messageId: 'message_id',
  state: "'ACTIVE'",
  responseStatus: 'NULL',
  time: 'active_at',
};

/**
 * The row-id bounds of the two parts of an events page after `cursor` (a listed event id): a
 * row's own event is listed as `2 × id + 1`, the ACTIVE event it carries as `2 × id`, so the rows
 * left are those with `id < own` and `id < active` respectively.
 */
export function eventPartBounds(cursor: number): { own: number; active: number } {
  return { own: Math.ceil((cursor - 1) / 2), active: Math.ceil(cursor / 2) };
}

export type Bind = (value: unknown) => string;

/** Escapes `%`, `_` and `\` for a LIKE pattern used with `ESCAPE '\'`. */
export function likeEscape(text: string): string {
  return text.replace(/[\\%_]/g, (c) => `\\${c}`);
}

/** Labels are stored comma-joined (a label cannot contain a comma: `Svc-Label` is split on it). */
export function joinLabels(labels: readonly string[] | undefined): string | null {
  return labels && labels.length > 0 ? labels.join(',') : null;
}

export function splitLabels(value: string | null | undefined): string[] | undefined {
  return value ? value.split(',') : undefined;
}

/** Matches a row whose comma-joined `labels` column holds any of `labels`. */
export function labelsClause(labels: readonly string[], bind: Bind): string {
  const one = (label: string): string =>
    `(',' || labels || ',') LIKE ${bind(`%,${likeEscape(label)},%`)} ESCAPE '\\'`;
  return `(${labels.map(one).join(' OR ')})`;
}

export function buildFilter(filter: RecordFilter, columns: FilterColumns, bind: Bind): string {
  const clauses: string[] = [];
  const anyOf = (column: string | undefined, values: readonly unknown[] | undefined): void => {
    if (!values || values.length === 0) return;
    if (!column) {
      clauses.push('1 = 0'); // the table has no such field, so nothing can match
      return;
    }
    clauses.push(`${column} IN (${values.map(bind).join(', ')})`);
  };

  anyOf(columns.messageId, filter.messageIds);
  anyOf(columns.dlqId, filter.dlqIds);
  anyOf(columns.state, filter.states);
  anyOf(columns.responseStatus, filter.responseStatuses);
  anyOf(columns.workflowRunId, filter.workflowRunIds);
  anyOf('url', filter.urls);
  anyOf('url_host', filter.hosts);
  anyOf('url_path', filter.paths);
  anyOf('topic_name', filter.topicNames);
  anyOf('queue_name', filter.queueNames);
  anyOf('schedule_id', filter.scheduleIds);
  anyOf('flow_control_key', filter.flowControlKeys);
  anyOf('caller_ip', filter.callerIps);
  if (filter.labels && filter.labels.length > 0) clauses.push(labelsClause(filter.labels, bind));
  if (filter.fromDate !== undefined) clauses.push(`${columns.time} >= ${bind(filter.fromDate)}`);
  if (filter.toDate !== undefined) clauses.push(`${columns.time} <= ${bind(filter.toDate)}`);
  return clauses.length > 0 ? clauses.join(' AND ') : '1 = 1';
}

/** Splits a URL into the `url_host`/`url_path` columns that the host/path filters match. */
export function urlParts(url: string): UrlParts {
  let parts = recentUrls.get(url);
  if (parts === undefined) {
    if (recentUrls.size >= RECENT_URLS) recentUrls.clear();
    parts = parseUrlParts(url);
    recentUrls.set(url, parts);
  }
  return parts;
}

interface UrlParts {
  readonly host: string;
  readonly path: string;
}

/**
 * The parts of the URLs split last. Every stored row (a message, each of its events) takes both
 * columns, so one URL is split several times per message, and most destinations recur: a
 * `new URL` each time was a measured 3 KB of garbage per message at 500 msg/s
 * (docs/benchmarks-log.md). Emptied when full: bounded, and no bookkeeping per hit.
 */
const recentUrls = new Map<string, UrlParts>();
const RECENT_URLS = 256;

function parseUrlParts(url: string): UrlParts {
  try {
    const parsed = new URL(url);
    return { host: parsed.host, path: parsed.pathname };
  } catch {
    return { host: '', path: '' };
  }
}

/**
 * The `url_host` value and the scheme prefix (`https:`) that select an origin's messages: the
 * host column is the URL's host (with a port that is not the default), so with the scheme it
 * names the origin. Undefined for something that is not an origin.
 */
export function originParts(origin: string): { host: string; scheme: string } | undefined {
  try {
    const parsed = new URL(origin);
    return parsed.origin === 'null' ? undefined : { host: parsed.host, scheme: parsed.protocol };
  } catch {
    return undefined;
  }
}
