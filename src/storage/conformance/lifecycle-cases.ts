/** Driver lifecycle: migrations, wake-ups, close. */
import { expect, it } from 'vitest';
import { makeAccount } from './fixtures.js';
import type { SuiteContext } from './suite.js';

export function lifecycleCases(ctx: SuiteContext): void {
  it('migrate is idempotent: a second run changes nothing and keeps the data', async () => {
    const driver = await ctx.open();
    try {
      await driver.migrate();
      const account = makeAccount();
      await driver.executor.accountInsert({ account });
      await driver.migrate();
      await driver.migrate();
      expect(await driver.executor.accountGet({ id: account.id })).toEqual(account);
    } finally {
      await ctx.close(driver);
    }
  });

  it('concurrent migrate calls on one driver both succeed', async () => {
    const driver = await ctx.open();
    try {
      await Promise.all([driver.migrate(), driver.migrate()]);
      const account = makeAccount();
      await driver.executor.accountInsert({ account });
      expect(await driver.executor.accountGet({ id: account.id })).toEqual(account);
    } finally {
      await ctx.close(driver);
    }
  });

  it('close is idempotent and waits for pending operations', async () => {
    const driver = await ctx.open();
    await driver.migrate();
    const account = makeAccount();
    const insert = driver.executor.accountInsert({ account });
    const closes = [driver.close(), driver.close()];
    await insert;
    await Promise.all(closes);
    await ctx.close(driver); // a third time, through the caller's own close
  });

  it('listenWake returns an unsubscribe; notifyWake resolves and carries the due time', async () => {
    const driver = ctx.driver();
    const received: (number | undefined)[] = [];
    let resolveWoken = (): void => {};
    const woken = new Promise<void>((resolve) => (resolveWoken = resolve));
    const unsubscribe = await driver.listenWake((dueAt) => {
      received.push(dueAt);
      if (received.length === 2) resolveWoken();
    });
    await driver.notifyWake();
    await driver.notifyWake(1_700_000_123_456);
    // SQLite has one process per database and never calls back (the engine is woken in-process);
    // a multi-node driver (PostgreSQL) must deliver the wake-up, with its due time, to listeners.
    if (driver.name !== 'sqlite') {
      await woken;
      expect(received).toEqual([undefined, 1_700_000_123_456]);
    }
    await unsubscribe();
  });
}
