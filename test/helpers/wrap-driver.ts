/**
 * A real driver whose transactions a test can watch or slow down: `wrapTransactions` hands each
 * transaction's executor to `around`, which may wrap it (a Proxy that sees or delays the calls)
 * and act after the commit. Everything else goes to the driver untouched.
 */
import type { Driver, Executor, TransactionOptions } from '../../src/storage/driver.js';

/** Forwards every property of `target` but the ones `override` answers. */
function forward<T extends object>(target: T, override: (property: string | symbol) => unknown): T {
  return new Proxy(target, {
    get(object, property) {
      const replaced = override(property);
      if (replaced !== undefined) return replaced;
      const value = Reflect.get(object, property) as unknown;
      return typeof value === 'function' ? (value as () => unknown).bind(object) : value;
    },
  });
}

/** `tx` with `method` replaced by `replacement` (called with the original, bound). */
export function replacing<K extends keyof Executor>(
  tx: Executor,
  method: K,
  replacement: (original: Executor[K]) => Executor[K],
): Executor {
  const original = (tx[method] as (...args: unknown[]) => unknown).bind(tx) as Executor[K];
  const replaced = replacement(original);
  return forward(tx, (property) => (property === method ? replaced : undefined));
}

/** `driver` with `method` of its root executor replaced (see `replacing`). */
export function replacingAtRoot<K extends keyof Executor>(
  driver: Driver,
  method: K,
  replacement: (original: Executor[K]) => Executor[K],
): Driver {
  const executor = replacing(driver.executor, method, replacement);
  return forward(driver, (property) => (property === 'executor' ? executor : undefined));
}

export function wrapTransactions(
  driver: Driver,
  around: <T>(run: (wrapTx: (tx: Executor) => Executor) => Promise<T>) => Promise<T>,
): Driver {
  // Taken now: app.ts shadows `transaction` on the executor it is given (commit timing).
  const transaction = driver.executor.transaction.bind(driver.executor);
  const inTransaction = <T>(fn: (tx: Executor) => Promise<T>, options?: TransactionOptions) =>
    around((wrapTx) => transaction((tx) => fn(wrapTx(tx)), options));
  const executor = forward(driver.executor, (property) =>
    property === 'transaction' ? inTransaction : undefined,
  );
  return forward(driver, (property) => (property === 'executor' ? executor : undefined));
}
