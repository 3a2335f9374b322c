/**
 * What aborts a delivery (the engine's shutdown past its grace time): a flag and the callbacks of
 * whatever waits on the delivery at that moment (a slot, the HTTP exchange). Written instead of
 * using an AbortController: every delivery has one while only a shutdown ever fires it, and the
 * controller's signal (an EventTarget, created on first use) plus the listener each step adds and
 * removes cost about 3 µs of the main thread per delivery (measured, docs/benchmarks-log.md).
 */
export class DeliveryAbort {
  private fired = false;
  /** Usually none or one: the steps of a delivery wait one after another. */
  private listeners: (() => void)[] | undefined;

  get aborted(): boolean {
    return this.fired;
  }

  /** Fires once: calls every listener registered at that moment. */
  abort(): void {
    if (this.fired) return;
    this.fired = true;
    const listeners = this.listeners;
    this.listeners = undefined;
    for (const listener of listeners ?? []) listener();
  }

  /** Calls `listener` when the abort fires (never if it has fired already; check `aborted`). */
  on(listener: () => void): void {
    if (this.fired) return;
    (this.listeners ??= []).push(listener);
  }

  /** Forgets a listener of `on`. */
  off(listener: () => void): void {
    const i = this.listeners?.indexOf(listener) ?? -1;
    if (i !== -1) this.listeners?.splice(i, 1);
  }
}
