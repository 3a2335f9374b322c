/**
 * Query-string parsing for the filtered list and bulk endpoints. Multi-value filters come
 * repeated (`label=a&label=b`) or comma-joined (`label=a,b`); OR within a field, AND across.
 * Unknown parameters are a 400, so a typo (`labeel=`) never silently widens a bulk delete.
 */
import { badRequest } from '../core/errors.js';
import { EVENT_STATES, type EventState } from '../core/types.js';
import type { RecordFilter } from '../storage/driver.js';
import { TOKEN_PARAMS } from '../core/destination.js';

type ListKey = Exclude<keyof RecordFilter, 'fromDate' | 'toDate' | 'states' | 'responseStatuses'>;

/** Query parameter → filter field, for the string-valued filters. */
const LIST_PARAMS: Record<string, ListKey> = {
  messageId: 'messageIds',
  messageIds: 'messageIds',
  dlqId: 'dlqIds',
  dlqIds: 'dlqIds',
  url: 'urls',
  host: 'hosts',
  path: 'paths',
  topicName: 'topicNames',
  queueName: 'queueNames',
  scheduleId: 'scheduleIds',
  label: 'labels',
  flowControlKey: 'flowControlKeys',
  callerIp: 'callerIps',
  callerIP: 'callerIps',
};

export interface ParsedQuery {
  filter: RecordFilter;
  cursor?: string;
  count?: number;
}

export interface QuerySpec {
  /** Filter parameters this endpoint accepts (names as in LIST_PARAMS, plus state, responseStatus, fromDate, toDate). */
  filters: readonly string[];
  /** Largest `count`; absent = the endpoint takes no count. */
  maxCount?: number;
  /**
   * Takes `cursor`: `true` when storage checks it (the events log's numeric cursor), or the id
   * prefix of the listed items (`dlq`, `msg`) when the cursor is the last listed id. Storage
   * compares such a cursor with ids as text, so anything else would silently restart the list
   * from its beginning (a bulk delete or retry from its first page); it is a `400` instead.
   */
  cursor?: boolean | { idPrefix: string };
  /** Further parameters the route reads itself (accepted, not parsed here). */
  extra?: readonly string[];
}

function values(params: URLSearchParams, name: string): string[] {
  return params
    .getAll(name)
    .flatMap((v) => v.split(','))
    .map((v) => v.trim())
    .filter((v) => v !== '');
}

function integer(name: string, text: string, min: number, max: number): number {
  const value = Number(text);
  if (!/^-?\d+$/.test(text) || value < min || value > max) {
    throw badRequest(`invalid ${name} "${text}": must be an integer from ${min} to ${max}`);
  }
  return value;
}

export function parseQuery(params: URLSearchParams, spec: QuerySpec): ParsedQuery {
  const allowed = new Set([...spec.filters, ...(spec.extra ?? [])]);
  if (spec.maxCount !== undefined) allowed.add('count');
  if (spec.cursor) allowed.add('cursor');
  for (const name of new Set(params.keys())) {
    const bare = name.endsWith('[]') ? name.slice(0, -2) : name;
    if (!allowed.has(bare) && !TOKEN_PARAMS.has(name)) {
      throw badRequest(`unknown query parameter "${name}" (accepted: ${[...allowed].join(', ')})`);
    }
  }
  const all = (name: string): string[] => [...values(params, name), ...values(params, `${name}[]`)];

  const filter: RecordFilter = {};
  for (const name of spec.filters) {
    const key = LIST_PARAMS[name];
    const list = all(name);
    if (list.length === 0) continue;
    if (key) filter[key] = [...(filter[key] ?? []), ...list];
    else if (name === 'state') filter.states = list.flatMap(parseState);
    else if (name === 'responseStatus') {
      filter.responseStatuses = list.map((s) => integer('responseStatus', s, 100, 999));
    } else if (name === 'fromDate' || name === 'toDate') {
      filter[name] = integer(name, list[0] as string, 0, Number.MAX_SAFE_INTEGER);
    }
  }
  const result: ParsedQuery = { filter };
  const cursor = params.get('cursor');
  if (spec.cursor && cursor) {
    if (typeof spec.cursor === 'object' && !isIdCursor(cursor, spec.cursor.idPrefix)) {
      throw badRequest(
        `invalid cursor ${JSON.stringify(cursor)}: pass back the cursor of the previous page`,
      );
    }
    result.cursor = cursor;
  }
  const count = params.get('count');
  if (spec.maxCount !== undefined && count !== null && count !== '') {
    result.count = integer('count', count, 1, spec.maxCount);
  }
  return result;
}

/** An id as core/ids.ts makes them (`dlq_` + base-36 time + base64url), of any length. */
function isIdCursor(cursor: string, idPrefix: string): boolean {
  return (
    cursor.startsWith(`${idPrefix}_`) && /^[A-Za-z0-9_-]+$/.test(cursor.slice(idPrefix.length + 1))
  );
}

function parseState(text: string): EventState[] {
  const upper = text.toUpperCase();
  if (upper === 'IN_PROGRESS') return ['ACTIVE', 'RETRY', 'ERROR'];
  if (upper === 'CANCELED') return ['CANCELLED'];
  if ((EVENT_STATES as readonly string[]).includes(upper)) return [upper as EventState];
  throw badRequest(`invalid state "${text}" (known: ${EVENT_STATES.join(', ')}, IN_PROGRESS)`);
}

/**
 * The `cursor` field of a list or bulk answer: the next page's cursor, or no field at all on
 * the last page, as QStash answers and its SDKs' tests expect (they pass the field through).
 * Only the workflow DLQ resume/restart answer `""` instead (interface.md endpoint 6).
 */
export function cursorField(cursor: string | undefined): { cursor?: string } {
  return cursor ? { cursor } : {};
}
