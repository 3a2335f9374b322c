/** The append-only events log. */
import { badRequest } from '../../core/errors.js';
import type { EventRecord } from '../../core/types.js';
import type { EventDeleteBeforeParams, EventListParams, Page } from '../driver.js';
import { buildFilter, joinLabels, urlParts } from '../sql/filter.js';
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
]);

/** Every column but header/body, which the list takes from the CREATED event when missing. */
const LIST_COLUMNS = [
  'id',
  'account_id',
  'message_id',
  'time',
  'state',
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
  'error',
  'next_delivery_time',
  'response_status',
  'response_header',
]
  .map((column) => `e.${column}`)
  .join(', ');

/**
 * Newest first; the cursor is the last returned id (the next page has smaller ids). The page is
 * selected from `events` alone, so the filter's bare column names are unambiguous, and only then
 * joined (LATERAL, one index probe per row) to its message's CREATED event for header and body.
 */
export async function eventList(db: Db, p: EventListParams): Promise<Page<EventRecord>> {
  if (p.count <= 0) return { items: [] };
  const { bind, params } = newBinder();
  const where = [
    `account_id = ${bind(p.accountId)}`,
    buildFilter(
      p.filter,
      { messageId: 'message_id', state: 'state', responseStatus: 'response_status', time: 'time' },
      bind,
    ),
  ];
  if (p.cursor !== undefined) {
    if (!/^\d{1,18}$/.test(p.cursor)) throw badRequest('invalid cursor');
    where.push(`id < ${bind(p.cursor)}`);
  }
  // Bodies are cut in SQL: substring() of an out-of-line bytea fetches only the slice it needs
  // and octet_length() reads the stored length, so a list never loads a whole large body.
  const cut = bind(p.bodyCut ?? WHOLE);
  const text = `
    SELECT ${LIST_COLUMNS},
      substring(e.response_body from 1 for ${cut}) AS response_body,
      octet_length(e.response_body) AS response_body_size,
      COALESCE(e.header, c.header) AS header,
      COALESCE(substring(e.body from 1 for ${cut}), c.body) AS body,
      COALESCE(octet_length(e.body), c.body_size) AS body_size,
      COALESCE(e.body_redacted, c.body_redacted) AS body_redacted,
      COALESCE(e.body_id, c.body_id) AS body_id
    FROM (
      SELECT * FROM events WHERE ${where.join(' AND ')} ORDER BY id DESC LIMIT ${bind(p.count + 1)}
    ) e
    LEFT JOIN LATERAL (
      SELECT header, substring(body from 1 for ${cut}) AS body, octet_length(body) AS body_size,
        body_redacted, body_id FROM events
      WHERE message_id = e.message_id AND state = 'CREATED' AND e.state <> 'CREATED'
      ORDER BY id LIMIT 1
    ) c ON true
    ORDER BY e.id DESC`;
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
