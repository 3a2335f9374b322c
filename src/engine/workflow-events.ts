/**
 * Events between workflow runs (see core/workflow-events.ts): a waiter is a row plus its timeout
 * message, a delayed step message to the workflow URL. A notify and the timeout race for the
 * waiter row: each deletes it in its transaction and only the one that deleted it resumes the
 * run, so a run wakes exactly once, with the event data or with the timeout.
 */
import { newMessageId } from '../core/ids.js';
import type { EventRecord, Message } from '../core/types.js';
import { waitResultBody, type WorkflowWaiter } from '../core/workflow-events.js';
import type { Executor } from '../storage/driver.js';
import { historyEntry } from './publisher.js';
import { eventOf } from './records.js';

/** Stores a waiter and its timeout message (due at the waiter's deadline). */
export async function startWait(
  executor: Executor,
  p: { waiter: WorkflowWaiter; timeout: Message },
): Promise<void> {
  await executor.transaction(async (tx) => {
    await tx.workflowWaiterInsert({ waiter: p.waiter });
    await tx.messageInsertMany({ messages: [p.timeout] });
    await tx.eventInsertMany({ events: [eventOf(p.timeout, 'CREATED', p.timeout.createdAt)] });
  });
}

/** One waiter a notify woke, with the message that resumes its run. */
export interface Notified {
  waiter: WorkflowWaiter;
  messageId: string;
}

/**
 * Wakes every waiter of the account's event: deletes the waiter and its timeout message and
 * stores a step message carrying the event data, appended to the run's history. A waiter whose
 * run has ended, or whose timeout message is gone (cancelled by the user), is removed without
 * waking anything. Nothing is stored for an event nobody waits for.
 */
export async function notifyWaiters(
  executor: Executor,
  p: { accountId: string; eventId: string; eventData: Uint8Array; now: number },
): Promise<Notified[]> {
  const { accountId, now } = p;
  return executor.transaction(async (tx) => {
    const waiters = await tx.workflowWaiterList({ accountId, eventId: p.eventId });
    const notified: Notified[] = [];
    const messages: Message[] = [];
    const events: EventRecord[] = [];
    for (const waiter of waiters) {
      if (!(await tx.workflowWaiterDelete({ accountId, id: waiter.id }))) continue;
      const [timeout] = await tx.messageDeleteMany({
        accountId,
        filter: { messageIds: [waiter.id] },
      });
      if (!timeout) continue;
      events.push(eventOf(timeout, 'CANCELLED', now));
      const run = await tx.workflowRunGet({ accountId, runId: waiter.runId });
      const wf = timeout.spec.workflow;
      if (!run || run.state !== 'RUN_STARTED' || !wf) continue;
      const workflow = { ...wf };
      delete workflow.waitFor;
      const message: Message = {
        ...timeout,
        id: newMessageId(now),
        retried: 0,
        notBefore: now,
        createdAt: now,
        dueAt: now,
        spec: { ...timeout.spec, workflow },
        body: waitResultBody(waiter.step, { eventData: p.eventData }),
      };
      await tx.workflowStepAppend({ step: historyEntry(message) });
      messages.push(message);
      events.push(eventOf(message, 'CREATED', now));
      notified.push({ waiter, messageId: message.id });
    }
    if (messages.length > 0) await tx.messageInsertMany({ messages });
    if (events.length > 0) await tx.eventInsertMany({ events });
    return notified;
  });
}

/**
 * Called when a waiter's timeout message is delivered and is not in the history yet: the
 * timeout wins when it deletes the waiter, and its message joins the run's history. False when
 * a notify came first (the message must not be delivered).
 */
export async function claimWaitTimeout(executor: Executor, message: Message): Promise<boolean> {
  return executor.transaction(async (tx) => {
    const won = await tx.workflowWaiterDelete({ accountId: message.accountId, id: message.id });
    if (won) await tx.workflowStepAppend({ step: historyEntry(message) });
    return won;
  });
}
