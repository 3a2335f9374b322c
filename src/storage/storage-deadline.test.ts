/**
 * The deadline's timer, in real time: one timer serves every operation waiting (storage-deadline
 * .ts), so each must still fail at its own deadline, not at an earlier operation's, and work that
 * settles in time is never failed.
 */
import { describe, expect, it } from 'vitest';
import { Deadline, StorageNoAnswerError } from './storage-deadline.js';

const never = new Promise<never>(() => {});

/** When `promise` settled, ms after `start`, and how. */
async function settled(
  promise: Promise<unknown>,
  start: number,
): Promise<{ at: number; error?: unknown; value?: unknown }> {
  try {
    const value = await promise;
    return { at: performance.now() - start, value };
  } catch (error) {
    return { at: performance.now() - start, error };
  }
}

describe('Deadline', () => {
  it('fails each operation at its own deadline, and never one that settled in time', async () => {
    const deadline = new Deadline(200);
    const start = performance.now();
    const first = settled(deadline.operation(never, true), start);
    const quick = settled(
      deadline.operation(new Promise((resolve) => setTimeout(() => resolve('done'), 20)), false),
      start,
    );
    await new Promise((resolve) => setTimeout(resolve, 100));
    const secondStart = performance.now() - start;
    const second = settled(deadline.operation(never, false), start);

    const [a, q, b] = await Promise.all([first, quick, second]);
    expect(q).toMatchObject({ value: 'done' });
    expect(a.error).toBeInstanceOf(StorageNoAnswerError);
    expect((a.error as StorageNoAnswerError).applied).toBe('no');
    expect(b.error).toBeInstanceOf(StorageNoAnswerError);
    expect((b.error as StorageNoAnswerError).applied).toBe('unknown');
    // Timers fire no earlier than asked; the upper bounds leave room for a loaded machine.
    expect(a.at).toBeGreaterThanOrEqual(199);
    expect(a.at).toBeLessThan(290);
    // The second one's deadline runs from its own start, whenever the first one's timer fired
    // (on a loaded machine that can be late, and the gap between the two shorter).
    expect(b.at).toBeGreaterThanOrEqual(secondStart + 199);
    expect(b.at).toBeLessThan(secondStart + 290);
  });

  it('passes on the work’s own error at once', async () => {
    const deadline = new Deadline(5_000);
    const start = performance.now();
    const failed = await settled(
      deadline.operation(Promise.reject(new Error('boom')), true),
      start,
    );
    expect((failed.error as Error).message).toBe('boom');
    expect(failed.at).toBeLessThan(1_000);
  });
});
