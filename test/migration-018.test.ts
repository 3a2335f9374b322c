/**
 * Migration 018 (the workflow run of a message as a column, for the logs' `next` group) fills
 * the column of the messages stored before it from their spec: the messages of a database at
 * version 17 that belong to a run are found by the run after the upgrade, plain ones are not.
 */
import { describe, expect, it } from 'vitest';
import type { Message } from '../src/core/types.js';
import type { WorkflowCallType } from '../src/core/workflow.js';
import type { Driver } from '../src/storage/driver.js';
import { MESSAGE_COLUMNS, messageParams } from '../src/storage/sqlite/sqlite-rows.js';
import { T0, makeMessage } from '../src/storage/conformance/fixtures.js';
import { STORAGES } from './helpers/ferry.js';
import { upgradedFrom, type OldRow } from './helpers/old-database.js';

const ACCOUNT = 'acct_migrated_018';
const RUN_ID = 'wfr_before-018.x';

/** The columns of `messages` before 018: all but `workflow_run_id`, the last one. */
const COLUMNS = MESSAGE_COLUMNS.split(', ').filter((c) => c !== 'workflow_run_id');

const ofRun = (runId: string, callType: WorkflowCallType, createdAt: number): Message =>
  makeMessage(ACCOUNT, {
    createdAt,
    spec: {
      method: 'POST',
      // A header whose value names a run id, as a value (escaped quotes): not the message's run.
      headers: { 'X-Note': ['{"runId":"wfr_other"}'] },
      workflow: { runId, url: 'https://app.example.com/wf', createdAt: T0, callType },
    },
  });

const STEP = ofRun(RUN_ID, 'step', T0 + 1);
const CALL = ofRun(RUN_ID, 'toCallback', T0 + 2);
const OTHER = ofRun('wfr_other', 'step', T0 + 3);
const PLAIN = makeMessage(ACCOUNT, {
  createdAt: T0 + 4,
  spec: { method: 'POST', headers: { 'X-Note': ['"runId":"wfr_before-018.x"'] } },
});

async function checkMigrated(driver: Driver): Promise<void> {
  await driver.migrate();
  const ids = async (runId: string) =>
    (
      await driver.executor.messageList({
        accountId: ACCOUNT,
        filter: { workflowRunIds: [runId] },
        count: 10,
      })
    ).items.map((m) => m.message.id);
  expect(await ids(RUN_ID)).toEqual([CALL.id, STEP.id]);
  expect(await ids('wfr_other')).toEqual([OTHER.id]);
  // The messages themselves are as they were.
  expect(await driver.executor.messageGet({ accountId: ACCOUNT, id: PLAIN.id })).toMatchObject({
    spec: PLAIN.spec,
  });
}

describe.each(STORAGES)('migration 018 on %s', (storage) => {
  it('fills the workflow run of the messages stored before', async () => {
    const rows = [STEP, CALL, OTHER, PLAIN].map((m): OldRow => [
      'messages',
      COLUMNS,
      messageParams(m).slice(0, COLUMNS.length),
    ]);
    await upgradedFrom(storage, 18, rows, checkMigrated);
  });
});
