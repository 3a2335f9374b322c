import { describe, expect, it } from 'vitest';
import { DeliveryAbort } from './delivery-abort.js';

describe('DeliveryAbort', () => {
  it('calls the listeners registered when it fires, once, and not those taken off', () => {
    const abort = new DeliveryAbort();
    const calls: string[] = [];
    const first = (): void => void calls.push('first');
    const second = (): void => void calls.push('second');
    const removed = (): void => void calls.push('removed');
    abort.on(first);
    abort.on(removed);
    abort.on(second);
    abort.off(removed);
    expect(abort.aborted).toBe(false);
    abort.abort();
    abort.abort();
    expect(abort.aborted).toBe(true);
    expect(calls).toEqual(['first', 'second']);
  });

  it('never calls a listener registered after it fired (callers check `aborted` first)', () => {
    const abort = new DeliveryAbort();
    abort.abort();
    let called = false;
    abort.on(() => (called = true));
    abort.abort();
    expect(called).toBe(false);
  });
});
