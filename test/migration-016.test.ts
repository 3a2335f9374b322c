/**
 * Migration 016 (the workflow filters host, path, messageId and responseStatus) fills the new
 * columns of the runs stored before it: a database at version 15 finds its runs by the host and
 * path of their URL and its DLQ entries by their response status after the upgrade.
 */
import { describe, expect, it } from 'vitest';
import type { Driver, WorkflowRunFilter } from '../src/storage/driver.js';
import { workflowRunValues } from '../src/storage/sql/workflow-rows.js';
import { makeMessage } from '../src/storage/conformance/fixtures.js';
import { makeRun } from '../src/storage/conformance/workflow-cases.js';
import { STORAGES } from './helpers/ferry.js';
import { upgradedFrom, type OldRow } from './helpers/old-database.js';

const ACCOUNT = 'acct_migrated';
/** The columns of `workflow_runs` before 016. */
const COLUMNS = [
  'account_id',
  'run_id',
  'url',
  'state',
  'created_at',
  'updated_at',
  'caller_ip',
  'labels',
  'flow_control_key',
  'dlq_id',
  'failure_state',
  'doc',
];

const RUNS = [
  makeRun(ACCOUNT, { runId: 'wfr_port', url: 'https://App.example.com:8080/api/wf?x=1#top' }),
  makeRun(ACCOUNT, { runId: 'wfr_bare', url: 'http://bare.example.com', createdAt: 1 }),
  makeRun(ACCOUNT, {
    runId: 'wfr_failed',
    url: 'https://app.example.com/api/fail',
    state: 'RUN_FAILED',
    dlq: {
      dlqId: 'dlq_0000000001',
      createdAt: 1,
      message: makeMessage(ACCOUNT),
      responseStatus: 503,
    },
  }),
];

async function checkMigrated(driver: Driver): Promise<void> {
  await driver.migrate();
  const ids = async (filter: WorkflowRunFilter) =>
    (await driver.executor.workflowRunList({ accountId: ACCOUNT, filter, count: 10 })).items
      .map((r) => r.runId)
      .sort();
  expect(await ids({ hosts: ['app.example.com:8080'] })).toEqual(['wfr_port']);
  expect(await ids({ paths: ['/api/wf'] })).toEqual(['wfr_port']);
  expect(await ids({ hosts: ['bare.example.com'], paths: ['/'] })).toEqual(['wfr_bare']);
  expect(await ids({ hosts: ['app.example.com'], paths: ['/api/fail'] })).toEqual(['wfr_failed']);
  expect(await ids({ inDlq: true, responseStatuses: [503] })).toEqual(['wfr_failed']);
  expect(await ids({ inDlq: true, responseStatuses: [500] })).toEqual([]);
}

describe.each(STORAGES)('migration 016 on %s', (storage) => {
  it('fills host, path and the DLQ response status of the runs stored before', async () => {
    const rows = RUNS.map((run): OldRow => [
      'workflow_runs',
      COLUMNS,
      workflowRunValues(run).slice(0, COLUMNS.length),
    ]);
    await upgradedFrom(storage, 16, rows, checkMigrated);
  });
});
