import type { DeliveryAbort } from './delivery-abort.js';

/**
 * Deliveries in flight per account on one engine, for `max_global_parallelism`. A delivery over
 * the limit waits (its message stays leased) until one of the account's deliveries ends; the
 * freed slot passes straight to the longest waiter, so waiters start in claim order.
 */
export class AccountSlots {
  private readonly inFlight = new Map<string, number>();
  private readonly waiters = new Map<string, (() => void)[]>();

  /** The account's deliveries in flight here. */
  count(accountId: string): number {
    return this.inFlight.get(accountId) ?? 0;
  }

  /**
   * Takes a slot, waiting for one when `max` are taken. Resolves false (no slot taken) when
   * `abort` fires first: the caller releases the message instead of delivering it.
   */
  async acquire(accountId: string, max: number, abort?: DeliveryAbort): Promise<boolean> {
    const taken = this.count(accountId);
    if (max <= 0 || taken < max) {
      this.inFlight.set(accountId, taken + 1);
      return true;
    }
    if (abort?.aborted) return false;
    return new Promise<boolean>((resolve) => {
      const queue = this.waiters.get(accountId) ?? [];
      const grant = (): void => {
        abort?.off(onAbort);
        resolve(true);
      };
      const onAbort = (): void => {
        const i = queue.indexOf(grant);
        if (i !== -1) queue.splice(i, 1);
        resolve(false);
      };
      abort?.on(onAbort);
      queue.push(grant);
      this.waiters.set(accountId, queue);
    });
  }

  /** Ends a delivery: its slot passes to the next waiter, or is freed. */
  release(accountId: string): void {
    const queue = this.waiters.get(accountId);
    const next = queue?.shift();
    if (queue && queue.length === 0) this.waiters.delete(accountId);
    if (next) {
      next(); // the slot passes on; the count stays
      return;
    }
    const taken = this.count(accountId) - 1;
    if (taken <= 0) this.inFlight.delete(accountId);
    else this.inFlight.set(accountId, taken);
  }
}
