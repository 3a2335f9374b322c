/** The `flow_gates` row shape of both SQL drivers and its mapping (see core/flow-control.ts). */
import type { FlowGate, FlowGateKind } from '../../core/flow-control.js';
import type { Int8 } from './rows.js';

export interface FlowGateRow {
  id: Int8;
  account_id: string;
  kind: string;
  name: string;
  parallelism: number | null;
  rate: number | null;
  period_sec: number;
  /** SQLite INTEGER 0/1, PostgreSQL BOOLEAN. */
  pinned_parallelism: number | boolean;
  pinned_rate: number | boolean;
  paused: number | boolean;
  rate_count: number;
  rate_period_start: Int8;
  ready_at: Int8 | null;
  created_at: Int8;
  updated_at: Int8;
}

/** The gate with its counts (read separately: waiting and holding messages). */
export function flowGateFromRow(
  row: FlowGateRow,
  counts: { waitListSize: number; parallelismCount: number },
): FlowGate {
  const gate: FlowGate = {
    accountId: row.account_id,
    kind: row.kind as FlowGateKind,
    name: row.name,
    periodSec: row.period_sec,
    pinnedParallelism: Boolean(row.pinned_parallelism),
    pinnedRate: Boolean(row.pinned_rate),
    paused: Boolean(row.paused),
    rateCount: row.rate_count,
    ratePeriodStart: Number(row.rate_period_start),
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
    ...counts,
  };
  if (row.parallelism !== null) gate.parallelism = row.parallelism;
  if (row.rate !== null) gate.rate = row.rate;
  return gate;
}

/** The limits part of a row, as the admission functions of core/flow-control.ts take them. */
export function gateLimits(
  row: Pick<
    FlowGateRow,
    'parallelism' | 'rate' | 'period_sec' | 'rate_count' | 'rate_period_start' | 'paused'
  >,
): Pick<
  FlowGate,
  'parallelism' | 'rate' | 'periodSec' | 'rateCount' | 'ratePeriodStart' | 'paused'
> {
  const limits: ReturnType<typeof gateLimits> = {
    periodSec: row.period_sec,
    rateCount: row.rate_count,
    ratePeriodStart: Number(row.rate_period_start),
    paused: Boolean(row.paused),
  };
  if (row.parallelism !== null) limits.parallelism = row.parallelism;
  if (row.rate !== null) limits.rate = row.rate;
  return limits;
}

/** `name LIKE %search%` with the LIKE wildcards of `search` escaped (ESCAPE '\'). */
export function likeContains(search: string): string {
  return `%${search.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}
