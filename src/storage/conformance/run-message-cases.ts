/**
 * A workflow run's messages that are not final (`messageList` with `workflowRunIds`), which the
 * logs show for a running run: every insert path stores a message's run (plain, leased, gated,
 * with a shared body; a batched publish), and the filter finds exactly that run's messages of
 * the account, whatever the history names.
 */
import { expect, it } from 'vitest';
import { newId } from '../../core/ids.js';
import type { ClaimedMessage, Message, MessageSpec } from '../../core/types.js';
import type { WorkflowCallType, WorkflowRun } from '../../core/workflow.js';
import { pendingSteps } from '../../engine/workflow-pending.js';
import { T0, makeAccount, makeEvent, makeMessage } from './fixtures.js';
import type { SuiteContext } from './suite.js';

/** A spec of a message of run `runId`. */
const runSpec = (runId: string, callType: WorkflowCallType, extra: Partial<MessageSpec> = {}) => ({
  method: 'POST' as const,
  headers: {},
  workflow: { runId, url: 'https://app.example.com/wf', createdAt: T0, callType },
  ...extra,
});

export function runMessageCases(ctx: SuiteContext): void {
  it('messageList with workflowRunIds lists the run’s messages of the account, newest first', async () => {
    const ex = ctx.executor();
    const account = makeAccount({ plan: 'paid' });
    await ex.accountInsert({ account });
    const accountId = account.id;
    const runId = newId('wfr');
    const at = (offset: number, spec: MessageSpec, extra: Partial<Message> = {}) =>
      makeMessage(accountId, { createdAt: T0 + offset, spec, ...extra });
    const step = at(1, runSpec(runId, 'step'));
    const call = at(2, runSpec(runId, 'toCallback'), { url: 'https://third.example.com/api' });
    const gated = at(
      3,
      runSpec(runId, 'fromCallback', { flowControl: { key: 'k', parallelism: 1, periodSec: 1 } }),
    );
    const shared = at(4, runSpec(runId, 'step'), { body: Buffer.alloc(10_000, 7) });
    const leased: ClaimedMessage = {
      ...at(
        5,
        runSpec(runId, 'step', { workflow: { ...runSpec(runId, 'step').workflow, waitFor: 'e' } }),
      ),
      leaseToken: newId('lease'),
    };
    const plain = at(6, { method: 'POST', headers: {} });
    const otherRun = at(7, runSpec(newId('wfr'), 'step'));
    // A run id is the SDK's choice: another account may use the same one.
    const otherAccount = makeMessage(newId('acct'), { spec: runSpec(runId, 'step') });
    await ex.messageInsertMany({ messages: [step, gated, shared, otherAccount] });
    // The batched publish (one statement on PostgreSQL), once with a message given leased.
    await ex.messagePublishMany({
      messages: [call, plain, otherRun],
      events: [call, plain, otherRun].map((m) => makeEvent(m)),
    });
    await ex.messagePublishMany({
      messages: [leased],
      events: [makeEvent(leased)],
      leaseLimits: { now: T0, maxInFlightByPlan: {} },
    });

    const list = async (workflowRunIds: string[], cursor?: string) =>
      ex.messageList({
        accountId,
        filter: { workflowRunIds },
        count: 3,
        bodyCut: 0,
        ...(cursor === undefined ? {} : { cursor }),
      });
    const first = await list([runId]);
    expect(first.items.map((m) => m.message.id)).toEqual([leased.id, shared.id, gated.id]);
    expect(first.items[0]?.message.spec.workflow?.waitFor).toBe('e');
    const rest = await list([runId], first.cursor);
    expect(rest.items.map((m) => m.message.id)).toEqual([call.id, step.id]);
    expect(rest.cursor).toBeUndefined();
    expect(rest.items[0]?.message.url).toBe('https://third.example.com/api');

    expect((await list([newId('wfr')])).items).toEqual([]);
    // Only messages have a run: no event matches.
    const events = await ex.eventList({ accountId, filter: { workflowRunIds: [runId] }, count: 9 });
    expect(events.items).toEqual([]);

    // A final message leaves the list (its row is deleted).
    await ex.messageDeleteMany({ accountId, filter: { messageIds: [step.id, call.id] } });
    const left = await ex.messageList({ accountId, filter: { workflowRunIds: [runId] }, count: 9 });
    expect(left.items.map((m) => m.message.id)).toEqual([leased.id, shared.id, gated.id]);
  });

  it('a running run’s step not due yet shows the due time storage holds, not its RETRY event’s', async () => {
    const ex = ctx.executor();
    const account = makeAccount({ plan: 'paid' });
    await ex.accountInsert({ account });
    const runId = newId('wfr');
    // Its retry was set for T0 + 1 s, and then moved (a paced destination, a spread backlog).
    const moved = makeMessage(account.id, { spec: runSpec(runId, 'step'), retried: 1 });
    const due = makeMessage(account.id, { spec: runSpec(runId, 'step'), retried: 1 });
    await ex.messageInsertMany({ messages: [{ ...moved, dueAt: T0 + 5_000 }, due] });
    await ex.eventInsertMany({
      events: [moved, due].flatMap((m) => [
        makeEvent(m, { state: 'ERROR', time: T0 - 2, error: 'HTTP 500' }),
        makeEvent(m, { state: 'RETRY', time: T0 - 1, nextDeliveryTime: T0 + 1_000 }),
      ]),
    });
    const run = { runId, accountId: account.id, state: 'RUN_STARTED' } as WorkflowRun;
    const steps = await pendingSteps(ex, run, [], undefined, T0);
    const times = Object.fromEntries(steps.map((s) => [s.message.id, s.nextDeliveryTime]));
    // The one due already: the time its retry was set for.
    expect(times).toEqual({ [moved.id]: T0 + 5_000, [due.id]: T0 + 1_000 });
  });
}
