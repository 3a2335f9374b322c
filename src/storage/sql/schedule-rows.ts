/**
 * The `schedules` row shape (the same columns in both SQL drivers) and its mapping; see
 * `rows.ts` for the conventions (NULL → absent, BIGINT as a string from PostgreSQL).
 */
import type { Schedule, ScheduleRequest, ScheduleSpec } from '../../core/schedule.js';
import { cutSize, type Int8 } from './rows.js';

export interface ScheduleRow {
  account_id: string;
  id: string;
  cron: string;
  destination: string;
  created_at: Int8;
  /** 0/1 in SQLite, a boolean in PostgreSQL. */
  paused: number | boolean;
  queue_name: string | null;
  caller_ip: string;
  next_schedule_time: Int8 | null;
  last_schedule_time: Int8 | null;
  last_message_ids: string | null;
  request: string;
  spec: string;
  body: Buffer;
  /** The whole length of `body` when a list may have cut it. */
  body_size?: Int8 | null;
}

/**
 * The columns a list reads: `body` cut to the first `cut` bytes, with its whole length (SQLite's
 * substr() of an empty BLOB is NULL, hence the COALESCE).
 */
export const scheduleListColumns = (cut: string): string =>
  SCHEDULE_COLUMNS.filter((c) => c !== 'body').join(', ') +
  `, COALESCE(substr(body, 1, ${cut}), body) AS body, length(body) AS body_size`;

/** Column order of an insert; `scheduleValues` gives the values in the same order. */
export const SCHEDULE_COLUMNS = [
  'account_id',
  'id',
  'cron',
  'destination',
  'created_at',
  'paused',
  'queue_name',
  'caller_ip',
  'next_schedule_time',
  'last_schedule_time',
  'last_message_ids',
  'request',
  'spec',
  'body',
] as const;

/** The insert values, NULL for absent fields; `paused` as a boolean (SQLite binds 0/1 itself). */
export function scheduleValues(s: Schedule): (string | number | boolean | Uint8Array | null)[] {
  return [
    s.accountId,
    s.id,
    s.cron,
    s.destination,
    s.createdAt,
    s.paused,
    s.queueName ?? null,
    s.callerIp,
    s.nextScheduleTime ?? null,
    s.lastScheduleTime ?? null,
    s.lastMessageIds === undefined ? null : JSON.stringify(s.lastMessageIds),
    JSON.stringify(s.request),
    JSON.stringify(s.spec),
    s.body,
  ];
}

export function scheduleFromRow(row: ScheduleRow): Schedule {
  const schedule: Schedule = {
    id: row.id,
    accountId: row.account_id,
    cron: row.cron,
    destination: row.destination,
    createdAt: Number(row.created_at),
    paused: Boolean(row.paused),
    request: JSON.parse(row.request) as ScheduleRequest,
    spec: JSON.parse(row.spec) as ScheduleSpec,
    body: row.body,
    callerIp: row.caller_ip,
  };
  if (row.queue_name !== null) schedule.queueName = row.queue_name;
  const size = cutSize(row.body, row.body_size);
  if (size !== undefined) schedule.bodySize = size;
  if (row.next_schedule_time !== null) schedule.nextScheduleTime = Number(row.next_schedule_time);
  if (row.last_schedule_time !== null) schedule.lastScheduleTime = Number(row.last_schedule_time);
  if (row.last_message_ids !== null) {
    schedule.lastMessageIds = JSON.parse(row.last_message_ids) as string[];
  }
  return schedule;
}
