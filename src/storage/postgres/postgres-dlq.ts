/** The dead-letter queue. */
import type { DlqEntry } from '../../core/types.js';
import type {
  DlqDeleteExpiredParams,
  DlqDeleteManyParams,
  DlqEvictOldestParams,
  DlqGetParams,
  DlqListParams,
  Page,
} from '../driver.js';
import { buildFilter, joinLabels, urlParts } from '../sql/filter.js';
import { batchInsert } from './postgres-batch.js';
import { newBinder } from './postgres-bind.js';
import { type Db } from './postgres-rows.js';
import { type DlqRow, dlqMessageJson, dlqFromRow } from '../sql/rows.js';
import { inlineBody, sharedBodyId } from '../sql/bodies.js';
import { withBodies } from './postgres-bodies.js';

/** A cut longer than any body: the list reads bodies whole. */
const WHOLE = 2_147_483_647;

const json = (value: unknown): string | undefined =>
  value === undefined ? undefined : JSON.stringify(value);

export const insertDlqEntries = batchInsert<DlqEntry>('dlq', [
  { name: 'dlq_id', type: 'text', value: (d) => d.dlqId },
  { name: 'account_id', type: 'text', value: (d) => d.message.accountId },
  { name: 'message_id', type: 'text', value: (d) => d.message.id },
  { name: 'created_at', type: 'bigint', value: (d) => d.createdAt },
  { name: 'expires_at', type: 'bigint', value: (d) => d.expiresAt },
  { name: 'url', type: 'text', value: (d) => d.message.url },
  { name: 'url_host', type: 'text', value: (d) => urlParts(d.message.url).host },
  { name: 'url_path', type: 'text', value: (d) => urlParts(d.message.url).path },
  { name: 'topic_name', type: 'text', value: (d) => d.message.topicName },
  { name: 'queue_name', type: 'text', value: (d) => d.message.queueName },
  { name: 'schedule_id', type: 'text', value: (d) => d.message.scheduleId },
  { name: 'labels', type: 'text', value: (d) => joinLabels(d.message.spec.labels) },
  { name: 'flow_control_key', type: 'text', value: (d) => d.message.spec.flowControl?.key },
  { name: 'caller_ip', type: 'text', value: (d) => d.message.callerIp },
  { name: 'response_status', type: 'integer', value: (d) => d.responseStatus },
  { name: 'response_header', type: 'text', value: (d) => json(d.responseHeader) },
  { name: 'response_body', type: 'bytea', value: (d) => d.responseBody },
  { name: 'error', type: 'text', value: (d) => d.error },
  { name: 'message', type: 'text', value: (d) => dlqMessageJson(d.message) },
  { name: 'body', type: 'bytea', value: (d) => inlineBody(d.message.body) },
  { name: 'body_id', type: 'text', value: (d) => sharedBodyId(d.message.body) },
]);

const ENTRY_COLUMNS = `dlq_id, created_at, expires_at, response_status, response_header,
  response_body, error, message, body, body_id`;

export async function dlqGet(db: Db, p: DlqGetParams): Promise<DlqEntry | undefined> {
  const [row] = await db.unsafe<DlqRow[]>(
    `SELECT ${ENTRY_COLUMNS} FROM dlq WHERE account_id = $1 AND dlq_id = $2`,
    [p.accountId, p.dlqId],
    { prepare: true },
  );
  if (!row) return undefined;
  const [whole] = await withBodies(db, [row]);
  return whole && dlqFromRow(whole);
}

/** Newest first by `dlq_id` (ids sort by creation time); the cursor is the last returned id. */
export async function dlqList(db: Db, p: DlqListParams): Promise<Page<DlqEntry>> {
  if (p.count <= 0) return { items: [] };
  const { bind, params } = newBinder();
  const where = [
    `account_id = ${bind(p.accountId)}`,
    buildFilter(
      p.filter,
      {
        messageId: 'message_id',
        dlqId: 'dlq_id',
        responseStatus: 'response_status',
        time: 'created_at',
      },
      bind,
    ),
  ];
  if (p.cursor !== undefined) where.push(`dlq_id < ${bind(p.cursor)}`);
  // Bodies are cut in SQL (substring() fetches only the slice of an out-of-line bytea).
  const cut = bind(p.bodyCut ?? WHOLE);
  const text = `SELECT dlq_id, created_at, expires_at, response_status, response_header, error,
      message, substring(response_body from 1 for ${cut}) AS response_body,
      octet_length(response_body) AS response_body_size,
      substring(body from 1 for ${cut}) AS body, octet_length(body) AS body_size, body_id
    FROM dlq WHERE ${where.join(' AND ')}
    ORDER BY dlq_id DESC LIMIT ${bind(p.count + 1)}`;
  const rows = await db.unsafe<DlqRow[]>(text, params);
  const items = (await withBodies(db, rows.slice(0, p.count), p.bodyCut ?? WHOLE)).map(dlqFromRow);
  const last = items[items.length - 1];
  return rows.length > p.count && last ? { items, cursor: last.dlqId } : { items };
}

export async function dlqDeleteMany(db: Db, p: DlqDeleteManyParams): Promise<number> {
  if (p.dlqIds.length === 0) return 0;
  const result = await db`
    DELETE FROM dlq WHERE account_id = ${p.accountId} AND dlq_id = ANY(${p.dlqIds}::text[])`;
  return result.count;
}

export async function dlqDeleteExpired(db: Db, p: DlqDeleteExpiredParams): Promise<number> {
  if (p.limit <= 0) return 0;
  const result = await db`
    DELETE FROM dlq WHERE dlq_id IN (
      SELECT dlq_id FROM dlq WHERE expires_at <= ${p.now} ORDER BY expires_at LIMIT ${p.limit}
    )`;
  return result.count;
}

/**
 * The size comes from `dlq_sizes` (kept by statement triggers, migration 006). The transaction
 * that inserted the entries holds that row's lock, so a concurrent insert of the same account on
 * another node waits, then sees the new size: each eviction removes its own overflow.
 */
export async function dlqEvictOldest(db: Db, p: DlqEvictOldestParams): Promise<DlqEntry[]> {
  const rows = await db.unsafe<DlqRow[]>(
    `DELETE FROM dlq WHERE account_id = $1 AND dlq_id IN (
       SELECT dlq_id FROM dlq WHERE account_id = $1 ORDER BY dlq_id
       LIMIT GREATEST(0, COALESCE((SELECT size FROM dlq_sizes WHERE account_id = $1), 0) - $2)
     ) RETURNING ${ENTRY_COLUMNS}`,
    [p.accountId, p.maxSize],
    { prepare: true },
  );
  return (await withBodies(db, rows)).map(dlqFromRow).sort((a, b) => (a.dlqId < b.dlqId ? -1 : 1));
}
