/** Deduplication keys: claim, duplicate window, expiry, isolation, pruning. */
import { expect, it } from 'vitest';
import { newId, newMessageId } from '../../core/ids.js';
import type { DedupClaimParams } from '../driver.js';
import { T0 } from './fixtures.js';
import type { SuiteContext } from './suite.js';

const WINDOW_MS = 60_000;

function claim(accountId: string, key: string, now: number): DedupClaimParams {
  return { accountId, key, messageId: newMessageId(now), now, expiresAt: now + WINDOW_MS };
}

export function dedupCases(ctx: SuiteContext): void {
  it('a free key is taken by the message', async () => {
    const params = claim(newId('acct'), newId('key'), T0);
    expect(await ctx.executor().dedupClaim(params)).toEqual({
      messageId: params.messageId,
      duplicate: false,
    });
  });

  it('within the window the key is a duplicate of the first message', async () => {
    const ex = ctx.executor();
    const [accountId, key] = [newId('acct'), newId('key')];
    const first = claim(accountId, key, T0);
    await ex.dedupClaim(first);
    for (const now of [T0, T0 + 1, T0 + WINDOW_MS - 1]) {
      expect(await ex.dedupClaim(claim(accountId, key, now))).toEqual({
        messageId: first.messageId,
        duplicate: true,
      });
    }
  });

  it('an expired key (expiresAt <= now) is taken by the next message', async () => {
    const ex = ctx.executor();
    const [accountId, key] = [newId('acct'), newId('key')];
    await ex.dedupClaim(claim(accountId, key, T0));
    const second = claim(accountId, key, T0 + WINDOW_MS);
    expect(await ex.dedupClaim(second)).toEqual({ messageId: second.messageId, duplicate: false });
    // The new owner's window starts at its claim.
    expect(await ex.dedupClaim(claim(accountId, key, T0 + WINDOW_MS + 1))).toEqual({
      messageId: second.messageId,
      duplicate: true,
    });
  });

  it('keys are independent across accounts and across keys', async () => {
    const ex = ctx.executor();
    const key = newId('key');
    const one = claim(newId('acct'), key, T0);
    const two = claim(newId('acct'), key, T0);
    const three = claim(one.accountId, newId('key'), T0);
    for (const params of [one, two, three]) {
      expect(await ex.dedupClaim(params)).toEqual({
        messageId: params.messageId,
        duplicate: false,
      });
    }
  });

  it('concurrent claims of one key: exactly one wins, the others see it', async () => {
    const ex = ctx.executor();
    const [accountId, key] = [newId('acct'), newId('key')];
    const attempts = Array.from({ length: 5 }, () => claim(accountId, key, T0));
    const results = await Promise.all(attempts.map((p) => ex.dedupClaim(p)));
    const winners = results.filter((r) => !r.duplicate);
    expect(winners).toHaveLength(1);
    expect(new Set(results.map((r) => r.messageId)).size).toBe(1);
  });

  it('dedupDeleteExpired deletes keys with expiresAt <= now, at most limit per call', async () => {
    const ex = ctx.executor();
    // Pruning is global, so this case works in 1970, where no other case writes.
    const now = Date.UTC(1970, 0, 2);
    await ex.dedupDeleteExpired({ now, limit: 1_000_000 });
    const accountId = newId('acct');
    const keyed = (expiresAt: number): DedupClaimParams => ({
      ...claim(accountId, newId('key'), 1_000),
      expiresAt,
    });
    for (const params of [keyed(now - 1), keyed(now), keyed(now - 2)]) await ex.dedupClaim(params);
    const kept = keyed(now + 1);
    await ex.dedupClaim(kept);

    expect(await ex.dedupDeleteExpired({ now, limit: 2 })).toBe(2);
    expect(await ex.dedupDeleteExpired({ now, limit: 2 })).toBe(1);
    expect(await ex.dedupDeleteExpired({ now, limit: 2 })).toBe(0);
    // The unexpired key still holds.
    expect(await ex.dedupClaim({ ...claim(accountId, kept.key, 1_001) })).toEqual({
      messageId: kept.messageId,
      duplicate: true,
    });
  });
}
