/** Workflow waiters: insert and list per account and event (every field), delete exactly once, also between concurrent transactions. */
import { expect, it } from 'vitest';
import { newId, newMessageId } from '../../core/ids.js';
import type { WorkflowWaiter } from '../../core/workflow-events.js';
import { T0, plain } from './fixtures.js';
import type { SuiteContext } from './suite.js';

function makeWaiter(accountId: string, eventId: string, createdAt: number): WorkflowWaiter {
  return {
    accountId,
    eventId,
    id: newMessageId(createdAt),
    runId: newId('wfr'),
    url: 'https://app.example.com/api/workflow',
    deadline: createdAt + 60_000,
    createdAt,
    step: { stepId: 2, stepName: 'wait', stepType: 'Wait', concurrent: 1 },
    headers: { 'Upstash-Workflow-Sdk-Version': ['1'] },
  };
}

export function workflowWaiterCases(ctx: SuiteContext): void {
  it('workflowWaiterList returns the waiters of one account and event, oldest first, every field', async () => {
    const ex = ctx.executor();
    const accountId = newId('acct');
    const later = makeWaiter(accountId, 'paid', T0 + 5);
    const first: WorkflowWaiter = {
      ...makeWaiter(accountId, 'paid', T0),
      timeoutUrl: 'https://app.example.com/api/timeout',
      timeoutHeaders: { 'X-A': ['1', '2'] },
    };
    for (const waiter of [
      later,
      first,
      makeWaiter(accountId, 'shipped', T0),
      makeWaiter(newId('acct'), 'paid', T0),
    ]) {
      await ex.workflowWaiterInsert({ waiter });
    }
    expect(plain(await ex.workflowWaiterList({ accountId, eventId: 'paid' }))).toEqual([
      first,
      later,
    ]);
    expect(await ex.workflowWaiterList({ accountId, eventId: 'nobody' })).toEqual([]);
  });

  it('workflowWaiterDelete is true for the one caller that deleted, also across concurrent transactions', async () => {
    const ex = ctx.executor();
    const accountId = newId('acct');
    const waiter = makeWaiter(accountId, 'paid', T0);
    await ex.workflowWaiterInsert({ waiter });
    expect(await ex.workflowWaiterDelete({ accountId: newId('acct'), id: waiter.id })).toBe(false);
    expect(await ex.workflowWaiterDelete({ accountId, id: waiter.id })).toBe(true);
    expect(await ex.workflowWaiterDelete({ accountId, id: waiter.id })).toBe(false);

    const raced = makeWaiter(accountId, 'paid', T0 + 1);
    await ex.workflowWaiterInsert({ waiter: raced });
    const attempt = () =>
      ex.transaction(async (tx) => tx.workflowWaiterDelete({ accountId, id: raced.id }));
    const results = await Promise.all([attempt(), attempt(), attempt()]);
    expect(results.filter(Boolean)).toHaveLength(1);
    expect(await ex.workflowWaiterList({ accountId, eventId: 'paid' })).toEqual([]);
  });
}
