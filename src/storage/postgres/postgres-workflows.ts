/** Workflow runs and their history. */
import type { WorkflowRun, WorkflowStep } from '../../core/workflow.js';
import type { WorkflowWaiter } from '../../core/workflow-events.js';
import type {
  Page,
  WorkflowRunGetParams,
  WorkflowRunDeleteEndedParams,
  WorkflowRunInsertParams,
  WorkflowRunListParams,
  WorkflowRunUpdateParams,
  WorkflowStepAppendParams,
  WorkflowStepListParams,
  WorkflowWaiterDeleteParams,
  WorkflowWaiterInsertParams,
  WorkflowWaiterListParams,
} from '../driver.js';
import {
  WORKFLOW_RUN_COLUMNS,
  workflowRunFromRow,
  workflowRunPage,
  workflowRunValues,
  workflowRunWhere,
  workflowStepDeliveryValues,
  workflowStepFromRow,
  WORKFLOW_WAITER_COLUMNS,
  workflowWaiterFromRow,
  workflowWaiterValues,
  type WorkflowRunRow,
  type WorkflowStepRow,
  type WorkflowWaiterRow,
} from '../sql/workflow-rows.js';
import { BYTEA_OID, type Db } from './postgres-rows.js';

const INSERT_RUN = `INSERT INTO workflow_runs (${WORKFLOW_RUN_COLUMNS.join(', ')})
  VALUES (${WORKFLOW_RUN_COLUMNS.map((_, i) => `$${i + 1}`).join(', ')}) ON CONFLICT DO NOTHING`;
const UPDATE_SET = WORKFLOW_RUN_COLUMNS.slice(2)
  .map((c, i) => `${c} = $${i + 1}`)
  .join(', ');
const SETTABLE = WORKFLOW_RUN_COLUMNS.length - 2;
const UPDATE_RUN = `UPDATE workflow_runs SET ${UPDATE_SET}
  WHERE account_id = $${SETTABLE + 1} AND run_id = $${SETTABLE + 2}`;

export async function workflowRunInsert(
  db: Db,
  { run }: WorkflowRunInsertParams,
): Promise<boolean> {
  const result = await db.unsafe(INSERT_RUN, workflowRunValues(run), { prepare: true });
  return result.count > 0;
}

export async function workflowRunGet(
  db: Db,
  p: WorkflowRunGetParams,
): Promise<WorkflowRun | undefined> {
  const [row] = p.lock
    ? await db<WorkflowRunRow[]>`
    SELECT * FROM workflow_runs WHERE account_id = ${p.accountId} AND run_id = ${p.runId}
    FOR UPDATE`
    : await db<WorkflowRunRow[]>`
    SELECT * FROM workflow_runs WHERE account_id = ${p.accountId} AND run_id = ${p.runId}`;
  return row && workflowRunFromRow(row);
}

export async function workflowRunUpdate(
  db: Db,
  { run, ifState }: WorkflowRunUpdateParams,
): Promise<boolean> {
  const args: (string | number | null)[] = [
    ...workflowRunValues(run).slice(2),
    run.accountId,
    run.runId,
  ];
  let text = UPDATE_RUN;
  if (ifState !== undefined) {
    args.push(ifState);
    text += ` AND state = $${args.length}`;
  }
  const result = await db.unsafe(text, args, { prepare: true });
  return result.count > 0;
}

export async function workflowRunList(
  db: Db,
  p: WorkflowRunListParams,
): Promise<Page<WorkflowRun>> {
  const params: unknown[] = [p.accountId];
  const bind = (value: unknown): string => {
    params.push(value);
    return `$${params.length}`;
  };
  const { where, order } = workflowRunWhere(p.filter, p.cursor, bind);
  const text = `SELECT * FROM workflow_runs WHERE account_id = $1 AND ${where}
    ORDER BY ${order} LIMIT ${bind(p.count + 1)}`;
  const rows = await db.unsafe<WorkflowRunRow[]>(text, params as never[]);
  return workflowRunPage(rows.map(workflowRunFromRow), p.count, p.filter.inDlq === true);
}

/**
 * Must run in a transaction (the executor wraps it in one). Unlike SQLite, where the single
 * writer makes read-max-then-insert atomic, two nodes could read the same last `seq`: the run's
 * row is locked first, which serializes appends to one run (and only to that run).
 */
export async function workflowStepAppend(
  db: Db,
  { step }: WorkflowStepAppendParams,
): Promise<number> {
  await db`SELECT 1 FROM workflow_runs
    WHERE account_id = ${step.accountId} AND run_id = ${step.runId} FOR UPDATE`;
  const [retries, retryDelay, headers] = workflowStepDeliveryValues(step);
  const [row] = await db<{ seq: number }[]>`
    INSERT INTO workflow_steps (account_id, run_id, seq, message_id, call_type, created_at, body,
      retries, retry_delay, headers)
    SELECT ${step.accountId}, ${step.runId}, COALESCE(max(seq) + 1, 0), ${step.messageId},
      ${step.callType}, ${step.createdAt}, ${db.typed(step.body, BYTEA_OID)},
      ${retries}::integer, ${retryDelay}::text, ${headers}::text
    FROM workflow_steps WHERE account_id = ${step.accountId} AND run_id = ${step.runId}
    RETURNING seq`;
  return Number(row?.seq ?? 0);
}

export async function workflowStepList(db: Db, p: WorkflowStepListParams): Promise<WorkflowStep[]> {
  const rows = await db<WorkflowStepRow[]>`
    SELECT account_id, run_id, seq, message_id, call_type, created_at,
      retries, retry_delay, headers,
      substring(body from 1 for ${p.bodyCut ?? 2_147_483_647}) AS body,
      octet_length(body) AS body_size
    FROM workflow_steps WHERE account_id = ${p.accountId} AND run_id = ${p.runId}
    ORDER BY seq`;
  return rows.map(workflowStepFromRow);
}

const INSERT_WAITER = `INSERT INTO workflow_waiters (${WORKFLOW_WAITER_COLUMNS.join(', ')})
  VALUES (${WORKFLOW_WAITER_COLUMNS.map((_, i) => `$${i + 1}`).join(', ')})`;

export async function workflowWaiterInsert(
  db: Db,
  { waiter }: WorkflowWaiterInsertParams,
): Promise<void> {
  await db.unsafe(INSERT_WAITER, workflowWaiterValues(waiter), { prepare: true });
}

export async function workflowWaiterList(
  db: Db,
  p: WorkflowWaiterListParams,
): Promise<WorkflowWaiter[]> {
  const rows = await db<WorkflowWaiterRow[]>`
    SELECT * FROM workflow_waiters WHERE account_id = ${p.accountId} AND event_id = ${p.eventId}
    ORDER BY created_at, id`;
  return rows.map(workflowWaiterFromRow);
}

/** A concurrent delete of the same row waits for this one's commit, then deletes nothing. */
export async function workflowWaiterDelete(
  db: Db,
  p: WorkflowWaiterDeleteParams,
): Promise<boolean> {
  const result = await db`
    DELETE FROM workflow_waiters WHERE account_id = ${p.accountId} AND id = ${p.id}`;
  return result.count > 0;
}

/** Ended runs past retention and their history, in one statement (see the contract). */
export async function workflowRunDeleteEnded(
  db: Db,
  p: WorkflowRunDeleteEndedParams,
): Promise<number> {
  const [row] = await db<{ n: string }[]>`
    WITH gone AS (
      DELETE FROM workflow_runs WHERE (account_id, run_id) IN (
        SELECT account_id, run_id FROM workflow_runs
        WHERE state <> 'RUN_STARTED' AND dlq_id IS NULL AND updated_at < ${p.before}
        LIMIT ${p.limit}
      ) RETURNING account_id, run_id
    ), steps AS (
      DELETE FROM workflow_steps s USING gone g
      WHERE s.account_id = g.account_id AND s.run_id = g.run_id
    )
    SELECT count(*) AS n FROM gone`;
  return Number(row?.n ?? 0);
}
