/**
 * Workflow run operations on the SQLite connection, synchronous (wrapped by `sqlite-executor.ts`).
 *
 * Unlike PostgreSQL, appending a history entry needs no row lock: one connection serves the
 * process, so reading the last `seq` and inserting after it cannot interleave with another append.
 */
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
import type { SqliteStatements } from './sqlite-statements.js';

const INSERT_RUN = `INSERT INTO workflow_runs (${WORKFLOW_RUN_COLUMNS.join(', ')})
  VALUES (${WORKFLOW_RUN_COLUMNS.map(() => '?').join(', ')}) ON CONFLICT DO NOTHING`;
const UPDATE_RUN = `UPDATE workflow_runs SET ${WORKFLOW_RUN_COLUMNS.slice(2)
  .map((c) => `${c} = ?`)
  .join(', ')} WHERE account_id = ? AND run_id = ?`;

const INSERT_WAITER = `INSERT INTO workflow_waiters (${WORKFLOW_WAITER_COLUMNS.join(', ')})
  VALUES (${WORKFLOW_WAITER_COLUMNS.map(() => '?').join(', ')})`;

export class SqliteWorkflowOps {
  constructor(private readonly statements: SqliteStatements) {}

  workflowRunDeleteEnded({ before, limit }: WorkflowRunDeleteEndedParams): number {
    return this.statements.atomic(() => {
      const gone = this.statements
        .get(
          'DELETE FROM workflow_runs WHERE rowid IN (SELECT rowid FROM workflow_runs ' +
            "WHERE state <> 'RUN_STARTED' AND dlq_id IS NULL AND updated_at < ? LIMIT ?) " +
            'RETURNING account_id, run_id',
        )
        .all(before, limit) as { account_id: string; run_id: string }[];
      const steps = this.statements.get(
        'DELETE FROM workflow_steps WHERE account_id = ? AND run_id = ?',
      );
      for (const run of gone) steps.run(run.account_id, run.run_id);
      return gone.length;
    });
  }

  workflowRunInsert({ run }: WorkflowRunInsertParams): boolean {
    return this.statements.get(INSERT_RUN).run(...workflowRunValues(run)).changes > 0;
  }

  workflowRunGet({ accountId, runId }: WorkflowRunGetParams): WorkflowRun | undefined {
    const row = this.statements
      .get('SELECT * FROM workflow_runs WHERE account_id = ? AND run_id = ?')
      .get(accountId, runId) as WorkflowRunRow | undefined;
    return row && workflowRunFromRow(row);
  }

  workflowRunUpdate({ run, ifState }: WorkflowRunUpdateParams): boolean {
    const values = workflowRunValues(run);
    const sql = ifState === undefined ? UPDATE_RUN : `${UPDATE_RUN} AND state = ?`;
    const args = [...values.slice(2), run.accountId, run.runId];
    if (ifState !== undefined) args.push(ifState);
    return this.statements.get(sql).run(...args).changes > 0;
  }

  workflowRunList({ accountId, filter, cursor, count }: WorkflowRunListParams): Page<WorkflowRun> {
    const params: unknown[] = [];
    const { where, order } = workflowRunWhere(filter, cursor, (value) => {
      params.push(value);
      return '?';
    });
    const rows = this.statements
      .getDynamic(
        `SELECT * FROM workflow_runs WHERE account_id = ? AND ${where} ORDER BY ${order} LIMIT ?`,
      )
      .all(accountId, ...params, count + 1) as WorkflowRunRow[];
    return workflowRunPage(rows.map(workflowRunFromRow), count, filter.inDlq === true);
  }

  workflowStepAppend({ step }: WorkflowStepAppendParams): number {
    const st = this.statements;
    return st.atomic(() => {
      const last = st
        .get('SELECT max(seq) AS seq FROM workflow_steps WHERE account_id = ? AND run_id = ?')
        .get(step.accountId, step.runId) as { seq: number | null };
      const seq = last.seq === null ? 0 : last.seq + 1;
      st.get(
        `INSERT INTO workflow_steps (account_id, run_id, seq, message_id, call_type, created_at, body,
          retries, retry_delay, headers) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ).run(
        step.accountId,
        step.runId,
        seq,
        step.messageId,
        step.callType,
        step.createdAt,
        Buffer.from(step.body.buffer, step.body.byteOffset, step.body.byteLength),
        ...workflowStepDeliveryValues(step),
      );
      return seq;
    });
  }

  workflowStepList({ accountId, runId, bodyCut }: WorkflowStepListParams): WorkflowStep[] {
    const rows = this.statements
      .get(
        'SELECT account_id, run_id, seq, message_id, call_type, created_at, ' +
          'retries, retry_delay, headers, ' +
          'ifnull(substr(body, 1, ?), body) AS body, length(body) AS body_size ' +
          'FROM workflow_steps WHERE account_id = ? AND run_id = ? ORDER BY seq',
      )
      .all(bodyCut ?? 2_147_483_647, accountId, runId) as WorkflowStepRow[];
    return rows.map(workflowStepFromRow);
  }

  workflowWaiterInsert({ waiter }: WorkflowWaiterInsertParams): void {
    this.statements.get(INSERT_WAITER).run(...workflowWaiterValues(waiter));
  }

  workflowWaiterList({ accountId, eventId }: WorkflowWaiterListParams): WorkflowWaiter[] {
    const rows = this.statements
      .get(
        'SELECT * FROM workflow_waiters WHERE account_id = ? AND event_id = ? ORDER BY created_at, id',
      )
      .all(accountId, eventId) as WorkflowWaiterRow[];
    return rows.map(workflowWaiterFromRow);
  }

  workflowWaiterDelete({ accountId, id }: WorkflowWaiterDeleteParams): boolean {
    return (
      this.statements
        .get('DELETE FROM workflow_waiters WHERE account_id = ? AND id = ?')
        .run(accountId, id).changes > 0
    );
  }
}
