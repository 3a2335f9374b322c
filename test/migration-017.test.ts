/**
 * Migration 017 (what a history entry's message was delivered with: retries, retry delay,
 * forwarded headers) adds nullable columns: the entries of a database at version 16 still list
 * after the upgrade, without those fields, and the logs show the run's settings for them (the
 * trigger's retries, retry delay and forwarded headers, which every step inherits) with the
 * protocol headers.
 */
import { describe, expect, it } from 'vitest';
import { workflowRunJson } from '../src/api/workflow-presenters.js';
import type { Driver } from '../src/storage/driver.js';
import { WORKFLOW_RUN_COLUMNS, workflowRunValues } from '../src/storage/sql/workflow-rows.js';
import { T0 } from '../src/storage/conformance/fixtures.js';
import { makeRun } from '../src/storage/conformance/workflow-cases.js';
import { STORAGES } from './helpers/ferry.js';
import { upgradedFrom, type OldRow } from './helpers/old-database.js';

const ACCOUNT = 'acct_migrated_017';
const RUN = makeRun(ACCOUNT, {
  runId: 'wfr_before_017',
  labels: ['old'],
  settings: {
    headers: { 'X-User': ['kept'] },
    retries: 4,
    retryDelayExpression: '1000',
  },
});
/** The columns of `workflow_steps` before 017. */
const STEP_COLUMNS = [
  'account_id',
  'run_id',
  'seq',
  'message_id',
  'call_type',
  'created_at',
  'body',
];
const stepRow = (seq: number, messageId: string, body: string): OldRow => [
  'workflow_steps',
  STEP_COLUMNS,
  [ACCOUNT, RUN.runId, seq, messageId, 'step', T0 + seq, Buffer.from(body)],
];

async function checkMigrated(driver: Driver): Promise<void> {
  await driver.migrate();
  const steps = await driver.executor.workflowStepList({ accountId: ACCOUNT, runId: RUN.runId });
  expect(steps.map((s) => s.messageId)).toEqual(['msg_old_0', 'msg_old_1']);
  for (const step of steps) {
    expect(step.retries).toBeUndefined();
    expect(step.retryDelay).toBeUndefined();
    expect(step.headersJson).toBeUndefined();
  }
  const run = await driver.executor.workflowRunGet({ accountId: ACCOUNT, runId: RUN.runId });
  if (!run) throw new Error('the run is gone');
  const json = workflowRunJson(run, steps, { prefix: 'Svc' }) as {
    steps: { steps: Record<string, unknown>[] }[];
  };
  const shown = json.steps.flatMap((g) => g.steps);
  expect(shown).toHaveLength(2);
  for (const step of shown) {
    expect(step).toMatchObject({
      retries: 4,
      retryDelay: '1000',
      headers: {
        'X-User': ['kept'],
        'Svc-Workflow-RunId': [RUN.runId],
        'Svc-Workflow-Url': [RUN.url],
        'Svc-Workflow-CreatedAt': [String(RUN.createdAt)],
        'Svc-Label': ['old'],
      },
    });
  }
  expect(shown[1]?.stepName).toBe('one');
}

describe.each(STORAGES)('migration 017 on %s', (storage) => {
  it('keeps the history stored before; the logs show the run’s settings for it', async () => {
    const rows: OldRow[] = [
      // Every column of `workflow_runs` was there at 016.
      ['workflow_runs', WORKFLOW_RUN_COLUMNS, workflowRunValues(RUN)],
      stepRow(0, 'msg_old_0', '{"n":1}'),
      stepRow(
        1,
        'msg_old_1',
        JSON.stringify({ stepId: 1, stepName: 'one', stepType: 'Run', out: '1', concurrent: 1 }),
      ),
    ];
    await upgradedFrom(storage, 17, rows, checkMigrated);
  });
});
