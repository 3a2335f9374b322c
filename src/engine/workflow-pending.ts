/**
 * The steps a running workflow run is at, for the logs (the SDK's `{type: "next"}` group): the
 * run's messages that are not final yet, each with its failed attempts. Read from what storage
 * has anyway: a message row lives until the message is final, carries its run
 * (`workflowRunIds`, an index lookup: migration 018), and every failed attempt left an ERROR
 * event (and a RETRY event with its next delivery time) in the events log.
 *
 * Besides the messages of its history, a run can have in flight messages its history does not
 * name (core/workflow.ts, `WorkflowCallType`): a `context.call` on its way to the third party
 * (`toCallback`), the callback bringing its response back to the workflow URL (`fromCallback`),
 * and a wait's timeout before it comes due (`waitFor` set; it joins the history only when it
 * comes before a notify). A failure function's call (`failureCall`) is sent only once the run
 * has failed, so a running run has none.
 */
import type { EventRecord, Message } from '../core/types.js';
import type { WorkflowRun, WorkflowStep } from '../core/workflow.js';
import type { Executor, ListedMessage } from '../storage/driver.js';

/** A message of a running run that is not final yet. */
export interface PendingStep {
  message: Message;
  /**
   * The run's history names it (a step; a wait's timeout once it came due before a notify):
   * its entry there tells which step it is. False for a call, its callback, a wait's timeout.
   */
  inHistory: boolean;
  /** Set when the list cut the message's body (see `bodyCut`): the whole body's length, bytes. */
  bodySize?: number;
  /** Its failed attempts (ERROR events), oldest first; fewer than `retried` once pruned. */
  errors: EventRecord[];
  /**
   * When its current attempt is (or was) due, ms: for a message not due yet, the time storage
   * holds (after any move by flow control or a paced destination); else the first attempt at
   * the message's `notBefore`, a retry at the time its last RETRY event set (absent once that
   * was pruned).
   */
  nextDeliveryTime?: number;
}

/** Messages per storage read: a run's messages in flight are read a page at a time. */
const PAGE_SIZE = 500;

/** Runs `list` on `items` a slice of {@link PAGE_SIZE} at a time; the results in order. */
async function inSlices<I, T>(items: I[], list: (slice: I[]) => Promise<T[]>): Promise<T[]> {
  const out: T[] = [];
  for (let i = 0; i < items.length; i += PAGE_SIZE) {
    out.push(...(await list(items.slice(i, i + PAGE_SIZE))));
  }
  return out;
}

/**
 * The messages of `run` that are not final yet, with their failed attempts; nothing for a run
 * that is not running. Those of its history (`steps`) come first, in history order (an earlier
 * step's delivery may still be retrying after a later step was published: it published that
 * step, then failed); the others (calls, callbacks, wait timeouts) follow, oldest first.
 *
 * @param bodyCut the messages' bodies (a call's body, a wait's step) and the response bodies of
 *   the failed attempts are cut to this many bytes (as the logs' `bodyCut`).
 * @param now the time the messages' states are read at (see `nextDeliveryTime`).
 */
export async function pendingSteps(
  executor: Executor,
  run: WorkflowRun,
  steps: readonly WorkflowStep[],
  bodyCut: number | undefined,
  now: number,
): Promise<PendingStep[]> {
  if (run.state !== 'RUN_STARTED') return [];
  const accountId = run.accountId;
  const listed: ListedMessage[] = [];
  let cursor: string | undefined;
  do {
    const page = await executor.messageList({
      accountId,
      filter: { workflowRunIds: [run.runId] },
      count: PAGE_SIZE,
      bodyCut,
      now,
      ...(cursor === undefined ? {} : { cursor }),
    });
    listed.push(...page.items);
    cursor = page.cursor;
  } while (cursor !== undefined);
  const order = new Map<string, number>();
  for (const step of steps) if (!order.has(step.messageId)) order.set(step.messageId, step.seq);
  // History order first; the rest after it by id, which grows with the creation time.
  const rank = (id: string) => order.get(id) ?? Number.MAX_SAFE_INTEGER;
  const found = listed.sort(
    (a, b) =>
      rank(a.message.id) - rank(b.message.id) ||
      (a.message.id < b.message.id ? -1 : a.message.id > b.message.id ? 1 : 0),
  );
  const retried = found.map((f) => f.message).filter((m) => m.retried > 0);
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
  return found.map(({ message, bodySize, state }) => {
    const own = events.filter((e) => e.messageId === message.id).reverse(); // oldest first
    const step: PendingStep = {
      message,
      inHistory: order.has(message.id),
      errors: own.filter((e) => e.state === 'ERROR'),
    };
    if (bodySize !== undefined) step.bodySize = bodySize;
    const due =
      state === 'delayed'
        ? message.dueAt
        : message.retried === 0
          ? message.notBefore
          : own.findLast((e) => e.state === 'RETRY')?.nextDeliveryTime;
    if (due !== undefined) step.nextDeliveryTime = due;
    return step;
  });
}
