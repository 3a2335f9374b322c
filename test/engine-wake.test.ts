/**
 * The started engine never sleeps past a due time, even when time passes between its claim and
 * its read of the next due time. A message that became due in that window was neither claimed
 * (not due yet at the claim) nor the "next" due time (already past at the read), and the engine
 * slept its idle maximum (5 s): a callback's 100 ms retry arrived seconds late under load.
 *
 * The window is made deterministic with an injected clock that jumps forward between the
 * engine's claim and its next-due read; the storage is real.
 *
 * Nor does it spin or stall when a flow-control admission round fails: it tries again in a
 * second (measured on the wall clock between the injected failure and the delivery).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/core/clock.js';
import type { Driver } from '../src/storage/driver.js';
import { startFerry, STORAGES, type TestFerry } from './helpers/ferry.js';
import { startReceiver, type Receiver } from './helpers/receiver.js';
import { replacing, replacingAtRoot, wrapTransactions } from './helpers/wrap-driver.js';

/**
 * The driver, with the clock moved `jumpMs` forward when the first claim after `arm()` has
 * committed (the engine's claim is a write of its own, outside a transaction): time passes
 * between the engine's claim and its read of the next due time.
 */
function jumpingAfterClaim(
  clock: ManualClock,
  jumpMs: number,
): { wrap: (driver: Driver) => Driver; arm: () => void } {
  let armed = false;
  const wrap = (driver: Driver): Driver =>
    replacingAtRoot(driver, 'messageClaimDueLimited', (claim) => async (p) => {
      const result = await claim(p);
      if (armed) {
        armed = false;
        clock.advance(jumpMs);
      }
      return result;
    });
  return { wrap, arm: () => (armed = true) };
}

describe.each(STORAGES)('the started engine and its next due time (%s)', (storage) => {
  let t: TestFerry | undefined;
  let dest: Receiver | undefined;

  afterEach(async () => {
    await t?.close();
    t = undefined;
    await dest?.close();
  });

  it('claims a message that became due between its claim and its next-due read', async () => {
    const clock = new ManualClock(Date.now());
    const jump = jumpingAfterClaim(clock, 3_000);
    t = await startFerry({ storage, clock, wrapDriver: jump.wrap });
    dest = await startReceiver();
    // Due 1 s (of the test's clock) after the publish: the engine's timer claims at the real
    // 1 s and finds nothing due (the clock has not moved); then the clock jumps 3 s, and the
    // engine reads the next due time when the message is due already.
    const res = await t.api(`/v2/publish/${dest.url}/w`, {
      method: 'POST',
      body: 'x',
      headers: { 'Svc-Delay': '1s' },
    });
    expect(res.status).toBe(200);
    // The engine has planned its claim for the message's due time; its timer fires a real
    // second later.
    jump.arm();
    // The engine's idle maximum is 5 s: arriving within 3.5 s means it did not sleep that long.
    await dest.waitFor(1, 3_500);
  });

  it('tries a failed admission round again in about a second, not at once and not later', async () => {
    let armed = false;
    let failedAt: number | undefined;
    t = await startFerry({
      storage,
      wrapDriver: (driver) =>
        wrapTransactions(driver, (run) =>
          run((tx) =>
            replacing(tx, 'flowGateAdmit', (admit) => async (p) => {
              if (!armed) return admit(p);
              armed = false;
              failedAt = Date.now();
              throw new Error('admission failed (injected)');
            }),
          ),
        ),
    });
    // The first message's arrival arms the failure: its slot frees when it is answered, and the
    // admission of the second message fails once.
    dest = await startReceiver((_req, index) => {
      if (index === 0) armed = true;
      return { status: 200 };
    });
    const key = { 'Svc-Flow-Control-Key': 'k', 'Svc-Flow-Control-Value': 'parallelism=1' };
    const res = await t.api('/v2/batch', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify([0, 1].map(() => ({ destination: `${dest?.url}/k`, headers: key }))),
    });
    expect(res.status).toBe(200);
    const [, second] = await dest.waitFor(2, 5_000);
    if (failedAt === undefined || !second) throw new Error('the admission never failed');
    const gap = second.at - failedAt;
    expect(gap).toBeGreaterThanOrEqual(900);
    expect(gap).toBeLessThan(2_000);
  });
});
