/**
 * Events between workflow runs (see core/workflow-events.ts): a waiter is a row plus its timeout
 * message, a delayed step message to the workflow URL. A notify and the timeout race for the
 * waiter row: each deletes it in its transaction and only the one that deleted it resumes the
 * run, so a run wakes exactly once, with the event data or with the timeout.
 */
import { limitExceeded } from '../core/errors.js';
import { quoteValue } from '../core/headers.js';
import { newMessageId } from '../core/ids.js';
import type { EventRecord, Message } from '../core/types.js';
import { waitResultBody, type WorkflowWaiter } from '../core/workflow-events.js';
import type { MessageWorkflow, WorkflowRun } from '../core/workflow.js';
import type { Executor } from '../storage/driver.js';
import { historyEntry } from './publisher.js';
import { eventOf } from './records.js';

/**
 * Stores a waiter and its timeout message (due at the waiter's deadline). When an event was kept
 * for the run (a run-scoped notify or a webhook request before the wait), the wait takes the
 * oldest one instead: the run resumes now with its data and nothing waits. Returns the id of the
 * message stored.
 */
export async function startWait(
  executor: Executor,
  p: { waiter: WorkflowWaiter; timeout: Message },
): Promise<{ messageId: string; kept: boolean }> {
  const { waiter, timeout } = p;
  return executor.transaction(async (tx) => {
    // Locked: a run-scoped notify of this run either sees the waiter or keeps its event here.
    const run = await tx.workflowRunGet({
      accountId: waiter.accountId,
      runId: waiter.runId,
      lock: true,
    });
    const at = run?.keptEvents?.findIndex((e) => e.eventId === waiter.eventId) ?? -1;
    const kept = run?.keptEvents?.[at];
    if (run && kept) {
      const keptEvents = run.keptEvents?.filter((_, i) => i !== at) ?? [];
      const left: WorkflowRun = { ...run, keptEvents };
      if (keptEvents.length === 0) delete left.keptEvents;
      await tx.workflowRunUpdate({ run: left });
      const message = resumeMessage(timeout, waiter, kept.data, timeout.createdAt);
      await tx.workflowStepAppend({ step: historyEntry(message) });
      await tx.messageInsertMany({ messages: [message] });
      await tx.eventInsertMany({ events: [eventOf(message, 'CREATED', message.createdAt)] });
      return { messageId: message.id, kept: true };
    }
    await tx.workflowWaiterInsert({ waiter });
    await tx.messageInsertMany({ messages: [timeout] });
    await tx.eventInsertMany({ events: [eventOf(timeout, 'CREATED', timeout.createdAt)] });
    return { messageId: timeout.id, kept: false };
  });
}

/** The step message that resumes a waiter's run with the event data, due now. */
function resumeMessage(
  timeout: Message,
  waiter: WorkflowWaiter,
  eventData: Uint8Array,
  now: number,
): Message {
  const workflow = { ...timeout.spec.workflow };
  delete workflow.waitFor;
  return {
    ...timeout,
    id: newMessageId(now),
    retried: 0,
    notBefore: now,
    createdAt: now,
    dueAt: now,
    spec: { ...timeout.spec, workflow: workflow as MessageWorkflow },
    body: waitResultBody(waiter.step, { eventData }),
  };
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
  return executor.transaction(async (tx) => {
    const waiters = await tx.workflowWaiterList({ accountId: p.accountId, eventId: p.eventId });
    return wakeWaiters(tx, waiters, p.eventData, p.now);
  });
}

/** Wakes `waiters` with `tx` (see notifyWaiters); returns those woken. */
async function wakeWaiters(
  tx: Executor,
  waiters: WorkflowWaiter[],
  eventData: Uint8Array,
  now: number,
): Promise<Notified[]> {
  const notified: Notified[] = [];
  const messages: Message[] = [];
  const events: EventRecord[] = [];
  for (const waiter of waiters) {
    const { accountId } = waiter;
    if (!(await tx.workflowWaiterDelete({ accountId, id: waiter.id }))) continue;
    const [timeout] = await tx.messageDeleteMany({
      accountId,
      filter: { messageIds: [waiter.id] },
    });
    if (!timeout) continue;
    events.push(eventOf(timeout, 'CANCELLED', now));
    const run = await tx.workflowRunGet({ accountId, runId: waiter.runId });
    if (!run || run.state !== 'RUN_STARTED' || !timeout.spec.workflow) continue;
    const message = resumeMessage(timeout, waiter, eventData, now);
    await tx.workflowStepAppend({ step: historyEntry(message) });
    messages.push(message);
    events.push(eventOf(message, 'CREATED', now));
    notified.push({ waiter, messageId: message.id });
  }
  if (messages.length > 0) await tx.messageInsertMany({ messages });
  if (events.length > 0) await tx.eventInsertMany({ events });
  return notified;
}

/** Most events kept for one run that has not waited for them yet. */
export const MAX_KEPT_EVENTS = 100;
/** Most bytes of event data kept for one run. */
export const MAX_KEPT_EVENT_BYTES = 1024 * 1024;

/**
 * A run-scoped notify (the SDK's lookback: `POST /v2/notify/{runId}/{eventId}`, and a webhook
 * request): wakes the run when it waits for the event, else keeps the event on the run until
 * its `waitForEvent` comes (see startWait). `undefined` when the run does not exist or is not
 * running; `[]` when the event was kept.
 *
 * @throws FerryError 412 when the run keeps too many events already.
 */
export async function notifyRun(
  executor: Executor,
  p: { accountId: string; runId: string; eventId: string; eventData: Uint8Array; now: number },
): Promise<Notified[] | undefined> {
  const { accountId, now } = p;
  return executor.transaction(async (tx) => {
    const run = await tx.workflowRunGet({ accountId, runId: p.runId, lock: true });
    if (!run || run.state !== 'RUN_STARTED') return undefined;
    const waiters = await tx.workflowWaiterList({ accountId, eventId: p.eventId });
    const notified = await wakeWaiters(
      tx,
      waiters.filter((w) => w.runId === run.runId),
      p.eventData,
      now,
    );
    if (notified.length > 0) return notified;
    const keptEvents = [
      ...(run.keptEvents ?? []),
      { eventId: p.eventId, data: p.eventData, createdAt: now },
    ];
    const bytes = keptEvents.reduce((n, e) => n + e.data.byteLength, 0);
    if (keptEvents.length > MAX_KEPT_EVENTS || bytes > MAX_KEPT_EVENT_BYTES) {
      throw limitExceeded(
        `workflow run ${quoteValue(run.runId)} keeps ${MAX_KEPT_EVENTS} events or ${MAX_KEPT_EVENT_BYTES} bytes of them already: it must wait for them first`,
      );
    }
    await tx.workflowRunUpdate({ run: { ...run, keptEvents, updatedAt: now } });
    return [];
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

/**
 * Cancelled messages (`DELETE /v2/messages`, a cancelled run) that were waits' timeouts: their
 * waiters are deleted with them, so `GET /v2/waiters` stops listing a wait that can no longer
 * end, and a notify finds nobody. Other messages are ignored.
 */
export async function deleteCancelledWaits(tx: Executor, cancelled: Message[]): Promise<void> {
  for (const message of cancelled) {
    if (message.spec.workflow?.waitFor === undefined) continue;
    await tx.workflowWaiterDelete({ accountId: message.accountId, id: message.id });
  }
}
