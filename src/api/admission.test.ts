import { describe, expect, it } from 'vitest';
import { FerryError } from '../core/errors.js';
import type { PublishRefusal } from '../core/metrics.js';
import { PublishAdmission } from './admission.js';

/** A commit that finishes when the test says so. */
function held(): { promise: Promise<string>; finish: () => void } {
  let finish = (): void => undefined;
  const promise = new Promise<string>((resolve) => (finish = () => resolve('stored')));
  return { promise, finish };
}

function setup(maxPendingMessages: number, maxWaitMs: number) {
  let now = 1_000;
  const refusals: PublishRefusal[] = [];
  const admission = new PublishAdmission(
    { maxPendingMessages, maxWaitMs, now: () => now },
    (reason) => refusals.push(reason),
  );
  return { admission, refusals, advance: (ms: number) => (now += ms) };
}

/** Runs a request through admission; the refusal (a FerryError) or the pending commit. */
function attempt(admission: PublishAdmission, messages: number, commit: Promise<string>) {
  let stored = false;
  const result = admission.run(messages, () => {
    stored = true;
    return commit;
  });
  return { result, stored: () => stored };
}

describe('PublishAdmission', () => {
  it('admits anything while nothing waits, even a request larger than the queue limit', async () => {
    const { admission } = setup(10, 1_000);
    await expect(admission.run(500, () => Promise.resolve('stored'))).resolves.toBe('stored');
    expect(admission.pendingMessages).toBe(0);
  });

  it('refuses with 503 and Retry-After beyond the queue limit, without calling store', async () => {
    const { admission, refusals } = setup(10, 0);
    const first = held();
    const a = attempt(admission, 8, first.promise);
    const b = attempt(admission, 3, held().promise);
    await expect(b.result).rejects.toMatchObject({
      status: 503,
      headers: { 'retry-after': '1' },
      message:
        'Ferry is overloaded: 8 messages are waiting to be stored and this request adds 3 ' +
        '(at most 10, --publish-queue-limit); nothing was stored, try again later',
    });
    expect(b.stored()).toBe(false);
    expect(refusals).toEqual(['queue']);
    // Within the limit is admitted; once the waiting commit finishes, all is admitted again.
    const c = attempt(admission, 2, Promise.resolve('stored'));
    await expect(c.result).resolves.toBe('stored');
    first.finish();
    await expect(a.result).resolves.toBe('stored');
    expect(admission.pendingMessages).toBe(0);
    await expect(admission.run(10, () => Promise.resolve('again'))).resolves.toBe('again');
  });

  it('refuses while the oldest waiting publish has waited the wait limit, and recovers', async () => {
    const { admission, refusals, advance } = setup(0, 2_000);
    const oldest = held();
    const a = attempt(admission, 1, oldest.promise);
    advance(1_999);
    const b = held();
    const admitted = attempt(admission, 1, b.promise);
    expect(admitted.stored()).toBe(true);
    advance(1);
    const refused = attempt(admission, 1, held().promise);
    const error = await refused.result.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FerryError);
    expect(error).toMatchObject({ status: 503, headers: { 'retry-after': '2' } });
    expect((error as Error).message).toContain('the oldest publish has waited 2000 ms');
    expect(refused.stored()).toBe(false);
    expect(refusals).toEqual(['wait']);
    // The oldest is answered: the next oldest has waited 1 ms, so publishes are admitted again.
    oldest.finish();
    await a.result;
    const after = attempt(admission, 1, Promise.resolve('stored'));
    await expect(after.result).resolves.toBe('stored');
    b.finish();
    await admitted.result;
  });

  it('counts a failed commit as finished', async () => {
    const { admission } = setup(5, 1_000);
    await expect(admission.run(5, () => Promise.reject(new Error('disk full')))).rejects.toThrow(
      'disk full',
    );
    expect(admission.pendingMessages).toBe(0);
  });

  it('0 turns both limits off', async () => {
    const { admission, advance } = setup(0, 0);
    const waiting = held();
    const a = attempt(admission, 1_000_000, waiting.promise);
    advance(3_600_000);
    await expect(admission.run(1_000_000, () => Promise.resolve('ok'))).resolves.toBe('ok');
    waiting.finish();
    await a.result;
  });
});
