/** The append-only events log. */
import { badRequest } from '../../core/errors.js';
import type { EventRecord } from '../../core/types.js';
import type { EventDeleteBeforeParams, EventListParams, Page } from '../driver.js';
import {
  ACTIVE_EVENT_FILTER,
  buildFilter,
  EVENT_FILTER,
  eventPartBounds,
  joinLabels,
  urlParts,
  type FilterColumns,
} from '../sql/filter.js';
import { batchInsert } from './postgres-batch.js';
import { newBinder } from './postgres-bind.js';
import { type Db } from './postgres-rows.js';
import { type EventRow, eventFromRow } from '../sql/rows.js';
import { inlineOptionalBody, sharedBodyId } from '../sql/bodies.js';
import { withBodies } from './postgres-bodies.js';

/** A cut longer than any body: the list reads bodies whole. */
const WHOLE = 2_147_483_647;

const json = (value: unknown): string | undefined =>
  value === undefined ? undefined : JSON.stringify(value);

export const insertEvents = batchInsert<EventRecord>('events', [
  { name: 'account_id', type: 'text', value: (e) => e.accountId },
  { name: 'message_id', type: 'text', value: (e) => e.messageId },
  { name: 'time', type: 'bigint', value: (e) => e.time },
  { name: 'state', type: 'text', value: (e) => e.state },
  { name: 'url', type: 'text', value: (e) => e.url },
  { name: 'url_host', type: 'text', value: (e) => urlParts(e.url).host },
  { name: 'url_path', type: 'text', value: (e) => urlParts(e.url).path },
  { name: 'method', type: 'text', value: (e) => e.method },
  { name: 'topic_name', type: 'text', value: (e) => e.topicName },
  { name: 'endpoint_name', type: 'text', value: (e) => e.endpointName },
  { name: 'queue_name', type: 'text', value: (e) => e.queueName },
  { name: 'schedule_id', type: 'text', value: (e) => e.scheduleId },
  { name: 'labels', type: 'text', value: (e) => joinLabels(e.labels) },
  { name: 'flow_control_key', type: 'text', value: (e) => e.flowControlKey },
  { name: 'caller_ip', type: 'text', value: (e) => e.callerIp },
  { name: 'retried', type: 'integer', value: (e) => e.retried },
  { name: 'max_retries', type: 'integer', value: (e) => e.maxRetries },
  { name: 'header', type: 'text', value: (e) => json(e.header) },
  { name: 'body', type: 'bytea', value: (e) => inlineOptionalBody(e.body) },
  { name: 'error', type: 'text', value: (e) => e.error },
  { name: 'next_delivery_time', type: 'bigint', value: (e) => e.nextDeliveryTime },
  { name: 'response_status', type: 'integer', value: (e) => e.responseStatus },
  { name: 'response_header', type: 'text', value: (e) => json(e.responseHeader) },
  { name: 'response_body', type: 'bytea', value: (e) => e.responseBody },
  { name: 'body_redacted', type: 'text', value: (e) => e.bodyRedacted },
  { name: 'body_id', type: 'text', value: (e) => e.body && sharedBodyId(e.body) },
  { name: 'active_at', type: 'bigint', value: (e) => e.activeAt },
]);

/** The columns a row's events share; header/body come from the CREATED event when missing. */
const SHARED_COLUMNS = [
  'account_id',
  'message_id',
  'url',
  'method',
  'topic_name',
  'endpoint_name',
  'queue_name',
  'schedule_id',
  'labels',
  'flow_control_key',
  'caller_ip',
  'retried',
  'max_retries',
]
  .map((column) => `e.${column}`)
  .join(', ');

/** The outcome's columns: NULL for the ACTIVE event a row carries. */
const OUTCOME_COLUMNS = ['error', 'next_delivery_time', 'response_status', 'response_header']
  .map((column) => `CASE WHEN p.own THEN e.${column} END AS ${column}`)
  .join(', ');

/**
 * Newest first; the cursor is the last returned event's id (the next page has smaller ids). A row
 * stands for one event, or two when it carries its attempt's ACTIVE event (`active_at`, migration
 * 013): the listed ids are `2 × id + 1` for a row's own event and `2 × id` for the ACTIVE it
 * carries, so that ACTIVE comes just before its outcome. The page is chosen from the two parts
 * (each newest first through `events_account_id`, at most a page each, the filter applied to each
 * part's state and time, with bare column names of `events` alone), then joined back to its rows
 * and (LATERAL, one index probe per row) to its message's CREATED event for header and body.
 */
export async function eventList(db: Db, p: EventListParams): Promise<Page<EventRecord>> {
  if (p.count <= 0) return { items: [] };
  const { bind, params } = newBinder();
  let before: number | undefined;
  if (p.cursor !== undefined) {
    if (!/^\d{1,18}$/.test(p.cursor)) throw badRequest('invalid cursor');
    before = Number(p.cursor);
  }
  const part = (columns: FilterColumns, extra: string, bound: number | undefined): string => {
    const where = [
      `account_id = ${bind(p.accountId)}`,
      extra,
      buildFilter(p.filter, columns, bind),
    ];
    if (bound !== undefined) where.push(`id < ${bind(bound)}`);
    return where.filter((w) => w !== '').join(' AND ');
  };
  const limit = p.count + 1;
  const bounds = before === undefined ? undefined : eventPartBounds(before);
  const own = part(EVENT_FILTER, '', bounds?.own);
  const active = part(ACTIVE_EVENT_FILTER, 'active_at IS NOT NULL', bounds?.active);
  // Bodies are cut in SQL: substring() of an out-of-line bytea fetches only the slice it needs
  // and octet_length() reads the stored length, so a list never loads a whole large body.
  const cut = bind(p.bodyCut ?? WHOLE);
  const text = `
    SELECT p.vid AS id, p.vtime AS time, p.vstate AS state, ${SHARED_COLUMNS}, ${OUTCOME_COLUMNS},
      CASE WHEN p.own THEN substring(e.response_body from 1 for ${cut}) END AS response_body,
      CASE WHEN p.own THEN octet_length(e.response_body) END AS response_body_size,
      COALESCE(e.header, c.header) AS header,
      COALESCE(substring(e.body from 1 for ${cut}), c.body) AS body,
      COALESCE(octet_length(e.body), c.body_size) AS body_size,
      COALESCE(e.body_redacted, c.body_redacted) AS body_redacted,
      COALESCE(e.body_id, c.body_id) AS body_id
    FROM (
      (SELECT id AS rid, 2 * id + 1 AS vid, state AS vstate, time AS vtime, true AS own
        FROM events WHERE ${own} ORDER BY id DESC LIMIT ${bind(limit)})
      UNION ALL
      (SELECT id, 2 * id, 'ACTIVE', active_at, false
        FROM events WHERE ${active} ORDER BY id DESC LIMIT ${bind(limit)})
      ORDER BY vid DESC LIMIT ${bind(limit)}
    ) p
    JOIN events e ON e.id = p.rid
    LEFT JOIN LATERAL (
      SELECT header, substring(body from 1 for ${cut}) AS body, octet_length(body) AS body_size,
        body_redacted, body_id FROM events
      WHERE message_id = e.message_id AND state = 'CREATED' AND e.state <> 'CREATED'
      ORDER BY id LIMIT 1
    ) c ON true
    ORDER BY p.vid DESC`;
  const rows = await db.unsafe<EventRow[]>(text, params);
  const items = (await withBodies(db, rows.slice(0, p.count), p.bodyCut ?? WHOLE)).map(
    eventFromRow,
  );
  const last = items[items.length - 1];
  return rows.length > p.count && last ? { items, cursor: String(last.id) } : { items };
}

/** Deletes up to `limit` events older than `before` (a key subselect: DELETE has no LIMIT). */
export async function eventDeleteBefore(db: Db, p: EventDeleteBeforeParams): Promise<number> {
  if (p.limit <= 0) return 0;
  const result = await db`
    DELETE FROM events WHERE id IN (
      SELECT id FROM events WHERE time < ${p.before} ORDER BY time LIMIT ${p.limit}
    )`;
  return result.count;
}
