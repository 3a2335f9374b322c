/**
 * The steps a running workflow run is at, for the logs (the SDK's `{type: "next"}` group): the
 * messages of its history that are not final yet, each with its failed attempts. Read from what
 * storage has anyway: a message row lives until the message is final, and every failed attempt
 * left an ERROR event (and a RETRY event with its next delivery time) in the events log.
 *
 * Only messages of the history are found: a message of the run that is not in it (a
 * `context.call` on its way to the third party or back, a wait's timeout before it comes due)
 * could be found only by its run, which the messages table has no column for.
 */
import type { EventRecord, Message } from '../core/types.js';
import type { WorkflowRun, WorkflowStep } from '../core/workflow.js';
import type { Executor } from '../storage/driver.js';

/** A message of a run's history that is not final yet. */
export interface PendingStep {
  message: Message;
  /** Its failed attempts (ERROR events), oldest first; fewer than `retried` once pruned. */
  errors: EventRecord[];
  /**
   * When its current attempt is (or was) due, ms: the first attempt at the message's
   * `notBefore`, a retry at the time its last RETRY event set (absent once that was pruned).
   */
  nextDeliveryTime?: number;
}

/** Message ids per storage query: each is a bound parameter of an `IN (…)` list. */
const IDS_PER_QUERY = 500;

/** Runs `list` on `items` a slice of {@link IDS_PER_QUERY} at a time; the results in order. */
async function inSlices<I, T>(items: I[], list: (slice: I[]) => Promise<T[]>): Promise<T[]> {
  const out: T[] = [];
  for (let i = 0; i < items.length; i += IDS_PER_QUERY) {
    out.push(...(await list(items.slice(i, i + IDS_PER_QUERY))));
  }
  return out;
}

/**
 * The messages of `steps` (the run's history) that are not final yet, in history order, with
 * their failed attempts; nothing for a run that is not running. Every entry is looked up, not
 * only the last ones: an earlier step's delivery may still be retrying after a later step was
 * published (it published that step, then failed).
 *
 * @param bodyCut response bodies of the failed attempts are cut to this many bytes (as the
 *   logs' `bodyCut`).
 */
export async function pendingSteps(
  executor: Executor,
  run: WorkflowRun,
  steps: readonly WorkflowStep[],
  bodyCut?: number,
): Promise<PendingStep[]> {
  if (run.state !== 'RUN_STARTED' || steps.length === 0) return [];
  const accountId = run.accountId;
  const order = new Map<string, number>();
  for (const step of steps) if (!order.has(step.messageId)) order.set(step.messageId, step.seq);
  const found = await inSlices([...order.keys()], async (messageIds) => {
    const page = await executor.messageList({
      accountId,
      filter: { messageIds },
      count: messageIds.length,
      bodyCut: 0,
    });
    return page.items.map((listed) => listed.message);
  });
  // A resumed run's history keeps the entries of the run it resumed, with their message ids.
  const messages = found
    .filter((m) => m.spec.workflow?.runId === run.runId)
    .sort((a, b) => (order.get(a.id) ?? 0) - (order.get(b.id) ?? 0));
  const retried = messages.filter((m) => m.retried > 0);
  // Two events per failed attempt (ERROR, then RETRY); a bound, since `retried` ≤ `maxRetries`.
  const events = await inSlices(retried, async (slice) => {
    const page = await executor.eventList({
      accountId,
      filter: { messageIds: slice.map((m) => m.id), states: ['ERROR', 'RETRY'] },
      count: 2 * slice.reduce((sum, m) => sum + m.retried, 0),
      bodyCut,
    });
    return page.items;
  });
  return messages.map((message) => {
    const own = events.filter((e) => e.messageId === message.id).reverse(); // oldest first
    const step: PendingStep = { message, errors: own.filter((e) => e.state === 'ERROR') };
    const due =
      message.retried === 0
        ? message.notBefore
        : own.findLast((e) => e.state === 'RETRY')?.nextDeliveryTime;
    if (due !== undefined) step.nextDeliveryTime = due;
    return step;
  });
}
