/** Workflow runs: insert (duplicate ids), get, update (guarded by state), list with filters and cursors, history append/list. */
import { expect, it } from 'vitest';
import { newDlqId, newId } from '../../core/ids.js';
import type { HeaderMap } from '../../core/types.js';
import type { WorkflowRun, WorkflowStep } from '../../core/workflow.js';
import type { WorkflowRunFilter } from '../driver.js';
import { BINARY_BODY, T0, makeMessage, plain } from './fixtures.js';
import type { SuiteContext } from './suite.js';

export function makeRun(accountId: string, overrides: Partial<WorkflowRun> = {}): WorkflowRun {
  return {
    accountId,
    runId: newId('wfr'),
    url: 'https://app.example.com/api/workflow',
    state: 'RUN_STARTED',
    createdAt: T0,
    updatedAt: T0,
    callerIp: '10.0.0.1',
    settings: { headers: { 'X-A': ['1'] }, retries: 3 },
    ...overrides,
  };
}

/** A history entry of `run`: entry 0 (the store numbers it), with a binary body. */
export function makeStep(
  run: Pick<WorkflowRun, 'accountId' | 'runId'>,
  overrides: Partial<WorkflowStep> = {},
): WorkflowStep {
  return {
    accountId: run.accountId,
    runId: run.runId,
    seq: 0,
    messageId: newId('msg'),
    callType: 'step',
    body: BINARY_BODY,
    createdAt: T0,
    ...overrides,
  };
}

export function workflowCases(ctx: SuiteContext): void {
  it('workflowRunInsert then workflowRunGet returns every field; a second insert of the id is refused', async () => {
    const ex = ctx.executor();
    const accountId = newId('acct');
    const run = makeRun(accountId, {
      labels: ['a', 'b'],
      settings: {
        headers: {},
        retries: 1,
        flowControl: { key: 'k', parallelism: 2, periodSec: 1 },
        failureCallback: { url: 'https://f.example.com', method: 'POST', headers: {} },
        redact: { body: true, headers: ['authorization'] },
      },
    });
    expect(await ex.workflowRunInsert({ run })).toBe(true);
    expect(await ex.workflowRunInsert({ run: { ...run, url: 'https://other.example.com' } })).toBe(
      false,
    );
    expect(plain(await ex.workflowRunGet({ accountId, runId: run.runId }))).toEqual(run);
    expect(await ex.workflowRunGet({ accountId: newId('acct'), runId: run.runId })).toBeUndefined();
  });

  it('workflowRunUpdate replaces the run, keeps a DLQ entry with binary bodies, honours ifState', async () => {
    const ex = ctx.executor();
    const accountId = newId('acct');
    const run = makeRun(accountId);
    await ex.workflowRunInsert({ run });
    const failed: WorkflowRun = {
      ...run,
      state: 'RUN_FAILED',
      completedAt: T0 + 5,
      failureFunctionState: 'CALLBACK_INPROGRESS',
      dlq: {
        dlqId: newDlqId(T0 + 5),
        createdAt: T0 + 5,
        message: makeMessage(accountId, { body: BINARY_BODY }),
        responseStatus: 500,
        responseHeader: { 'Content-Type': ['text/plain'] },
        responseBody: BINARY_BODY,
      },
    };
    expect(await ex.workflowRunUpdate({ run: failed, ifState: 'RUN_SUCCESS' })).toBe(false);
    expect(await ex.workflowRunUpdate({ run: failed, ifState: 'RUN_STARTED' })).toBe(true);
    expect(plain(await ex.workflowRunGet({ accountId, runId: run.runId }))).toEqual(plain(failed));
  });

  it('workflowDlqCount counts the runs in one account’s workflow DLQ or every account’s, at most limit', async () => {
    const ex = ctx.executor();
    const inDlq = (accountId: string) =>
      makeRun(accountId, {
        state: 'RUN_FAILED',
        dlq: {
          dlqId: newDlqId(T0),
          createdAt: T0,
          message: makeMessage(accountId),
          responseStatus: 500,
        },
      });
    const all = (limit = 1_000_000) => ex.workflowDlqCount({ limit });
    const before = await all();
    const [a, b] = [newId('acct'), newId('acct')];
    const failed = [inDlq(a), inDlq(a), inDlq(b)];
    for (const run of [...failed, makeRun(a), makeRun(b, { state: 'RUN_FAILED' })]) {
      await ex.workflowRunInsert({ run });
    }
    expect(await all()).toBe(before + 3);
    expect(await all(before + 2)).toBe(before + 2);
    expect(await ex.workflowDlqCount({ accountId: a, limit: 10 })).toBe(2);
    expect(await ex.workflowDlqCount({ accountId: a, limit: 1 })).toBe(1);
    expect(await ex.workflowDlqCount({ accountId: b, limit: 10 })).toBe(1);
    const left: WorkflowRun = { ...failed[0]!, updatedAt: T0 + 1 };
    delete left.dlq;
    await ex.workflowRunUpdate({ run: left });
    expect(await all()).toBe(before + 2);
    expect(await ex.workflowDlqCount({ accountId: a, limit: 10 })).toBe(1);
  });

  it('workflowRunList filters (label, state, URL prefix, DLQ, failure state) and pages with a cursor', async () => {
    const ex = ctx.executor();
    const accountId = newId('acct');
    const runs = [0, 1, 2].map((i) =>
      makeRun(accountId, { createdAt: T0 + i, labels: i < 2 ? ['billing'] : ['other'] }),
    );
    for (const run of runs) await ex.workflowRunInsert({ run });
    const ids = (items: WorkflowRun[]) => items.map((r) => r.runId);

    const first = await ex.workflowRunList({
      accountId,
      filter: { labels: ['billing'] },
      count: 1,
    });
    expect(ids(first.items)).toEqual([runs[1]?.runId]);
    expect(first.cursor).toBeDefined();
    const second = await ex.workflowRunList({
      accountId,
      filter: { labels: ['billing'] },
      cursor: first.cursor,
      count: 1,
    });
    expect(ids(second.items)).toEqual([runs[0]?.runId]);
    expect(second.cursor).toBeUndefined();
    const byPrefix = await ex.workflowRunList({
      accountId,
      filter: { urlPrefixes: ['https://app.example.com/'], states: ['RUN_STARTED'] },
      count: 10,
    });
    expect(byPrefix.items).toHaveLength(3);

    const inDlq = runs[2] as WorkflowRun;
    const dlqId = newDlqId(T0 + 9);
    await ex.workflowRunUpdate({
      run: {
        ...inDlq,
        state: 'RUN_FAILED',
        failureFunctionState: 'CALLBACK_FAIL',
        dlq: { dlqId, createdAt: T0 + 9, message: makeMessage(accountId) },
      },
    });
    const dlq = await ex.workflowRunList({
      accountId,
      filter: { inDlq: true, failureFunctionStates: ['CALLBACK_FAIL'], fromDate: T0 + 9 },
      count: 10,
    });
    expect(dlq.items.map((r) => r.dlq?.dlqId)).toEqual([dlqId]);
    const none = await ex.workflowRunList({
      accountId,
      filter: { inDlq: true, toDate: T0 + 8 },
      count: 10,
    });
    expect(none.items).toEqual([]);
  });

  it('workflowRunList filters by the URL’s host and path, a step’s message id, the DLQ response status', async () => {
    const ex = ctx.executor();
    const accountId = newId('acct');
    const a = makeRun(accountId, { url: 'https://App.example.com:8443/api/wf?x=1' });
    const b = makeRun(accountId, { url: 'https://app.example.com/api/other', createdAt: T0 + 1 });
    const sameId = makeRun(newId('acct'), { runId: a.runId }); // another account, same run id
    for (const run of [a, b, sameId]) await ex.workflowRunInsert({ run });
    const step = (run: WorkflowRun, messageId: string) =>
      ex.workflowStepAppend({ step: makeStep(run, { messageId }) });
    await step(a, 'msg_a');
    await step(sameId, 'msg_same_id');
    const ids = async (filter: WorkflowRunFilter) =>
      (await ex.workflowRunList({ accountId, filter, count: 10 })).items.map((r) => r.runId);

    expect(await ids({ hosts: ['app.example.com:8443'] })).toEqual([a.runId]);
    expect(await ids({ hosts: ['app.example.com'] })).toEqual([b.runId]);
    expect(await ids({ paths: ['/api/wf', '/api/other'] })).toEqual([b.runId, a.runId]);
    expect(await ids({ paths: ['/api'] })).toEqual([]);
    expect(await ids({ messageIds: ['msg_a'] })).toEqual([a.runId]);
    expect(await ids({ messageIds: ['msg_none', 'msg_same_id'] })).toEqual([]);

    await ex.workflowRunUpdate({
      run: {
        ...b,
        state: 'RUN_FAILED',
        dlq: {
          dlqId: newDlqId(T0 + 2),
          createdAt: T0 + 2,
          message: makeMessage(accountId),
          responseStatus: 502,
        },
      },
    });
    expect(await ids({ inDlq: true, responseStatuses: [500, 502] })).toEqual([b.runId]);
    expect(await ids({ inDlq: true, responseStatuses: [500] })).toEqual([]);
  });

  it('workflowStepAppend numbers entries from 0 per run; workflowStepList returns them in order', async () => {
    const ex = ctx.executor();
    const accountId = newId('acct');
    const run = makeRun(accountId);
    await ex.workflowRunInsert({ run });
    const step = (messageId: string, body: Uint8Array) => ({
      accountId,
      runId: run.runId,
      seq: 99,
      messageId,
      callType: 'step' as const,
      body,
      createdAt: T0,
    });
    expect(await ex.workflowStepAppend({ step: step('m0', Buffer.from('init')) })).toBe(0);
    expect(await ex.workflowStepAppend({ step: step('m1', BINARY_BODY) })).toBe(1);
    const steps = await ex.workflowStepList({ accountId, runId: run.runId });
    expect(plain(steps)).toEqual(
      plain([
        { ...step('m0', Buffer.from('init')), seq: 0 },
        { ...step('m1', BINARY_BODY), seq: 1 },
      ]),
    );
    expect(await ex.workflowStepList({ accountId, runId: 'wfr_other' })).toEqual([]);
  });

  it('workflowStepAppend keeps what the entry was delivered with; an entry without it lists without it', async () => {
    const ex = ctx.executor();
    const accountId = newId('acct');
    const run = makeRun(accountId);
    await ex.workflowRunInsert({ run });
    const entry = (messageId: string) => makeStep(run, { messageId });
    // Header names and values are the sender's: any token, any value a header can carry.
    const headers: HeaderMap = Object.fromEntries([
      ['Content-Type', ['application/json']],
      ['X-Multi', ['one', 'two, with comma', '']],
      ['X-Unicode', ['héllo ✓']],
      ['__proto__', ['not a prototype']],
      ['X-Quote', ['"q" \\ {}']],
    ]);
    const delivered = {
      ...entry('m_kept'),
      retries: 0,
      retryDelay: 'pow(2, retried) * 1000',
      headersJson: JSON.stringify(headers),
    };
    await ex.workflowStepAppend({ step: entry('m_old') }); // as stored before migration 017
    await ex.workflowStepAppend({ step: delivered });
    await ex.workflowStepAppend({
      step: { ...entry('m_no_delay'), retries: 5, headersJson: '{}' },
    });
    const [old, kept, noDelay] = await ex.workflowStepList({ accountId, runId: run.runId });
    expect(plain(old)).toEqual(plain(entry('m_old')));
    expect(old && 'retries' in old).toBe(false);
    expect(plain(kept)).toEqual(plain({ ...delivered, seq: 1 }));
    // The text comes back as stored: `__proto__` stays a header name when it is parsed.
    expect(Object.keys(JSON.parse(kept?.headersJson ?? '{}') as object)).toContain('__proto__');
    expect(plain(noDelay)).toEqual(
      plain({ ...entry('m_no_delay'), seq: 2, retries: 5, headersJson: '{}' }),
    );
    // A list that cuts bodies still returns them.
    const [, cut] = await ex.workflowStepList({ accountId, runId: run.runId, bodyCut: 2 });
    expect(cut?.retries).toBe(0);
    expect(cut?.headersJson).toBe(JSON.stringify(headers));
  });

  it('workflowRunDeleteEnded deletes ended runs past retention with their history, not running or DLQ ones', async () => {
    const ex = ctx.executor();
    const accountId = newId('acct');
    // Far before T0, so no other case's runs (updated at T0 or later) qualify.
    const old = T0 - 10 * 86_400_000;
    const ended = makeRun(accountId, { state: 'RUN_SUCCESS', updatedAt: old });
    const cancelled = makeRun(accountId, { state: 'RUN_CANCELED', updatedAt: old });
    const running = makeRun(accountId, { updatedAt: old });
    const recent = makeRun(accountId, { state: 'RUN_SUCCESS', updatedAt: T0 });
    const inDlq = makeRun(accountId, {
      state: 'RUN_FAILED',
      updatedAt: old,
      dlq: { dlqId: newDlqId(old), createdAt: old, message: makeMessage(accountId) },
    });
    for (const run of [ended, cancelled, running, recent, inDlq]) {
      await ex.workflowRunInsert({ run });
      await ex.workflowStepAppend({ step: makeStep(run, { createdAt: old }) });
    }
    const before = T0 - 5 * 86_400_000;
    expect(await ex.workflowRunDeleteEnded({ before, limit: 1 })).toBe(1);
    expect(await ex.workflowRunDeleteEnded({ before, limit: 100 })).toBe(1);
    expect(await ex.workflowRunDeleteEnded({ before, limit: 100 })).toBe(0);
    for (const run of [ended, cancelled]) {
      expect(await ex.workflowRunGet({ accountId, runId: run.runId })).toBeUndefined();
      expect(await ex.workflowStepList({ accountId, runId: run.runId })).toEqual([]);
    }
    for (const run of [running, recent, inDlq]) {
      expect(await ex.workflowRunGet({ accountId, runId: run.runId })).toBeDefined();
      expect(await ex.workflowStepList({ accountId, runId: run.runId })).toHaveLength(1);
    }
  });
}
