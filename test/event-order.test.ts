/**
 * A message's log lists its ACTIVE event before the outcome of that attempt, however the
 * outcome writer's batches overlap. The ACTIVE events of a claim and the attempt's outcome can
 * go in two batches written at once (up to four are in flight), and on PostgreSQL the later
 * batch's insert could run first: the log (ordered by insertion) then showed DELIVERED before
 * ACTIVE, or a message in the DLQ whose newest event was ACTIVE. The first test makes that
 * overlap certain by slowing the write of ACTIVE events in a real driver, with a destination that
 * answers only once the ACTIVE event is being written on its own. The second checks the usual
 * case: an ACTIVE event still held when its outcome comes is stored on the outcome's row.
 */
import { join } from 'node:path';
import Database from 'better-sqlite3';
import postgres from 'postgres';
import { afterEach, describe, expect, it } from 'vitest';
import type { EventRecord } from '../src/core/types.js';
import type { Driver } from '../src/storage/driver.js';
import { pgUrl, startFerry, STORAGES, type TestFerry } from './helpers/ferry.js';
import { startReceiver, type Receiver } from './helpers/receiver.js';
import { replacing, replacingAtRoot, wrapTransactions } from './helpers/wrap-driver.js';

/**
 * The driver, with each write of ACTIVE events held `ms` before it runs (in a transaction, or as
 * the one statement of a batch on PostgreSQL); `started` is called as one begins.
 */
function slowActiveWrites(ms: number, started: () => void): (driver: Driver) => Driver {
  const hold = async (events: EventRecord[]): Promise<void> => {
    if (!events.some((e) => e.state === 'ACTIVE')) return;
    started();
    await new Promise((resolve) => setTimeout(resolve, ms)); // the slow write
  };
  return (driver) =>
    wrapTransactions(
      replacingAtRoot(driver, 'messageFinishMany', (finish) => async (params) => {
        await hold(params.events);
        return finish(params);
      }),
      (run) =>
        run((tx) =>
          replacing(tx, 'eventInsertMany', (insert) => async (params) => {
            await hold(params.events);
            return insert(params);
          }),
        ),
    );
}

/** The stored event rows of `messageIds`, as [message id, state, active_at], oldest first. */
async function eventRows(
  t: TestFerry,
  messageIds: string[],
): Promise<[string, string, number | null][]> {
  const text =
    'SELECT message_id, state, active_at FROM events WHERE message_id IN (SELECT value FROM ' +
    'json_each(?)) ORDER BY id';
  if (t.schema === undefined) {
    const db = new Database(join(t.config.dataDir, 'ferry.db'), { readonly: true });
    try {
      const rows = db.prepare(text).raw(true).all(JSON.stringify(messageIds));
      return rows as [string, string, number | null][];
    } finally {
      db.close();
    }
  }
  const sql = postgres(pgUrl as string, { onnotice: () => undefined, max: 1 });
  try {
    const rows = await sql.unsafe<
      { message_id: string; state: string; active_at: string | null }[]
    >(
      `SELECT message_id, state, active_at FROM ${t.schema}.events ` +
        'WHERE message_id = ANY ($1::text[]) ORDER BY id',
      [messageIds],
    );
    return rows.map((r) => [
      r.message_id,
      r.state,
      r.active_at === null ? null : Number(r.active_at),
    ]);
  } finally {
    await sql.end();
  }
}

describe.each(STORAGES)('the order of a message’s events (%s)', (storage) => {
  let t: TestFerry | undefined;
  let dest: Receiver | undefined;

  afterEach(async () => {
    await t?.close();
    t = undefined;
    await dest?.close();
  });

  it('lists ACTIVE before the attempt’s outcome when they are written in overlapping batches', async () => {
    // The destination answers once the ACTIVE event is being written on its own (held longer
    // than the writer waits for an outcome to take it along), so the outcome's batch overlaps it.
    let activeStarted = (): void => undefined;
    const activeWriting = new Promise<void>((resolve) => (activeStarted = resolve));
    t = await startFerry({ storage, wrapDriver: slowActiveWrites(300, () => activeStarted()) });
    dest = await startReceiver(async () => {
      await activeWriting;
      return { status: 200 };
    });
    const res = await t.api(`/v2/publish/${dest.url}/o`, { method: 'POST', body: 'x' });
    expect(res.status).toBe(200);
    const { messageId } = (await res.json()) as { messageId: string };
    await dest.waitFor(1, 10_000);
    // Both batches are written once the ACTIVE insert is: the log has three events then.
    const deadline = Date.now() + 10_000;
    let states: string[] = [];
    while (states.length < 3 && Date.now() < deadline) {
      const page = await t.api(`/v2/events?messageId=${messageId}`);
      states = ((await page.json()) as { events: { state: string }[] }).events.map((e) => e.state);
      if (states.length < 3) await new Promise((resolve) => setTimeout(resolve, 50)); // polling
    }
    expect(states).toEqual(['DELIVERED', 'ACTIVE', 'CREATED']);
  });

  it('stores a fast attempt’s ACTIVE event on its outcome’s row, and lists both', async () => {
    t = await startFerry({ storage });
    dest = await startReceiver();
    // One at a time, each delivered before the next (the first also opens the connections): a
    // claim of many at once on a cold node can take longer than the linger to deliver them.
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) {
      const res = await t.api(`/v2/publish/${dest.url}/fast`, { method: 'POST', body: `m${i}` });
      ids.push(((await res.json()) as { messageId: string }).messageId);
      await dest.waitFor(i + 1, 10_000);
    }
    const deadline = Date.now() + 10_000;
    let rows: [string, string, number | null][] = [];
    // Written once the outcome writer's batches are: polled (nothing to wait on from outside).
    while (rows.filter(([, state]) => state === 'DELIVERED').length < 20 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      rows = await eventRows(t, ids);
    }
    // A delivery to a local receiver ends well within the time a claim's ACTIVE event waits for
    // its outcome (ACTIVE_HOLD_MS), so the two share a row; one slower than that keeps two.
    const carried = rows.filter(
      ([, state, activeAt]) => state === 'DELIVERED' && activeAt !== null,
    );
    expect(carried.length).toBeGreaterThanOrEqual(15);
    expect(rows.length).toBe(60 - carried.length);
    for (const [messageId, , activeAt] of carried) {
      const page = await t.api(`/v2/events?messageId=${messageId}`);
      const { events } = (await page.json()) as { events: { state: string; time: number }[] };
      expect(events.map((e) => e.state)).toEqual(['DELIVERED', 'ACTIVE', 'CREATED']);
      expect(events[1]?.time).toBe(activeAt);
    }
  });
});
