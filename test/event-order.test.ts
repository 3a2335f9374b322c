/**
 * A message's log lists its ACTIVE event before the outcome of that attempt, however the
 * outcome writer's batches overlap. The ACTIVE events of a claim and the attempt's outcome can
 * go in two batches written at once (up to four are in flight), and on PostgreSQL the later
 * batch's insert could run first: the log (ordered by insertion) then showed DELIVERED before
 * ACTIVE, or a message in the DLQ whose newest event was ACTIVE. The test makes that overlap
 * certain by slowing the insert of ACTIVE events in a real driver.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Driver } from '../src/storage/driver.js';
import { startFerry, STORAGES, type TestFerry } from './helpers/ferry.js';
import { startReceiver, type Receiver } from './helpers/receiver.js';
import { replacing, wrapTransactions } from './helpers/wrap-driver.js';

/** The driver, with each insert of ACTIVE events held `ms` before it runs. */
function slowActiveInserts(ms: number): (driver: Driver) => Driver {
  return (driver) =>
    wrapTransactions(driver, (run) =>
      run((tx) =>
        replacing(tx, 'eventInsertMany', (insert) => async (params) => {
          if (params.events.some((e) => e.state === 'ACTIVE')) {
            await new Promise((resolve) => setTimeout(resolve, ms)); // the slow insert
          }
          return insert(params);
        }),
      ),
    );
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
    t = await startFerry({ storage, wrapDriver: slowActiveInserts(300) });
    dest = await startReceiver();
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
});
