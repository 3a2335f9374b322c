/**
 * With PostgreSQL every authentication reads the account's row (a token reset on one node must
 * be refused by every node's next request, see app.ts). Requests of one account that arrive in
 * the same turn of the event loop share that read (engine/accounts.ts); a request that arrives
 * once the read was sent gets a read of its own, and so sees a reset committed before it.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { systemClock } from '../src/core/clock.js';
import { DEFAULT_PLANS } from '../src/core/plans.js';
import { encodeToken, hashPassword } from '../src/core/token.js';
import { AccountDirectory } from '../src/engine/accounts.js';
import type { Executor } from '../src/storage/driver.js';
import { STORAGES, startFerry, type TestFerry } from './helpers/ferry.js';
import { replacing } from './helpers/wrap-driver.js';

describe.each(STORAGES)('account reads for authentication (%s)', (storage) => {
  let t: TestFerry;
  let reads: number;
  let directory: AccountDirectory;

  beforeEach(async () => {
    t = await startFerry({ storage, engine: false });
    reads = 0;
    const executor: Executor = replacing(
      t.ferry.driver.executor,
      'accountGet',
      (original) => (params) => {
        reads += 1;
        return original(params);
      },
    );
    // As app.ts builds it for PostgreSQL: authentication never uses a cached row.
    directory = new AccountDirectory(executor, DEFAULT_PLANS, systemClock, 1_000, 0);
  });
  afterEach(async () => t.close());

  it('reads the row once for the requests of one turn', async () => {
    const accounts = await Promise.all(
      Array.from({ length: 20 }, () => directory.authenticate(t.token)),
    );
    expect(accounts.every((a) => a?.id === t.account.id)).toBe(true);
    expect(reads).toBe(1);
  });

  it('reads again for a request that arrives after the read was sent, and sees a reset', async () => {
    expect((await directory.authenticate(t.token))?.id).toBe(t.account.id);
    const password = 'a-new-password-after-a-reset';
    await t.ferry.driver.executor.accountUpdate({
      id: t.account.id,
      passwordHash: hashPassword(password),
    });
    expect(await directory.authenticate(t.token)).toBeUndefined();
    const renewed = encodeToken(t.account.id, password);
    expect((await directory.authenticate(renewed))?.id).toBe(t.account.id);
    expect(reads).toBe(3);
  });
});
