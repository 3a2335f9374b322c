/**
 * Fairness between destinations (`messageSpreadDue`): an origin's due backlog moves into its
 * schedule in one statement. Claiming has no account scope, so every case starts by clearing the
 * messages table (see `clearMessages`).
 */
import { beforeEach, expect, it } from 'vitest';
import type { Account, Message } from '../../core/types.js';
import type { Executor } from '../driver.js';
import { clearMessages, makeAccount, makeMessage, T0 } from './fixtures.js';
import type { SuiteContext } from './suite.js';

export function spreadCases(ctx: SuiteContext): void {
  let ex: Executor;
  let account: Account;
  beforeEach(async () => {
    ex = ctx.executor();
    await clearMessages(ex);
    account = makeAccount();
    await ex.accountInsert({ account });
  });

  async function insert(url: string, ...offsets: number[]): Promise<Message[]> {
    const messages = offsets.map((offset) => makeMessage(account.id, { url, dueAt: T0 + offset }));
    await ex.messageInsertMany({ messages });
    return messages;
  }
  const dueAt = async (m: Message | undefined) =>
    (await ex.messageGet({ accountId: account.id, id: m?.id ?? '' }))?.dueAt;

  it('moves the origin’s due, unleased messages one step apart in due order, and no others', async () => {
    const [a3, a1, a2, later] = await insert('https://a.example.com/x', 30, 10, 20, 500);
    const [port] = await insert('https://A.example.com:443/y?z=1', 25); // the same origin
    const [other] = await insert('https://b.example.com/x', 5);
    const [http] = await insert('http://a.example.com/x', 5); // another scheme
    const [otherPort] = await insert('https://a.example.com:8443/x', 5);
    const [a0] = await insert('https://a.example.com/x', 0);
    const last = await ex.messageSpreadDue({
      origin: 'https://a.example.com',
      now: T0 + 100,
      from: T0 + 1_000,
      stepMs: 40,
      tickMs: 100,
      limit: 100,
    });
    // Five messages, 40 ms apart in 100 ms ticks: +0, +40, +80, +120, +160 → 0, 0, 0, 100, 100.
    expect(last).toBe(T0 + 1_100);
    expect(await dueAt(a0)).toBe(T0 + 1_000);
    expect(await dueAt(a1)).toBe(T0 + 1_000);
    expect(await dueAt(a2)).toBe(T0 + 1_000);
    expect(await dueAt(port)).toBe(T0 + 1_100);
    expect(await dueAt(a3)).toBe(T0 + 1_100);
    expect(await dueAt(later)).toBe(T0 + 500);
    expect(await dueAt(http)).toBe(T0 + 5);
    expect(await dueAt(otherPort)).toBe(T0 + 5);
    expect(await dueAt(other)).toBe(T0 + 5);
  });

  it('leaves leased messages and stops at the limit, earliest first', async () => {
    const [b1, b2, b3] = await insert('https://b.example.com/x', 1, 2, 3);
    const [held] = await ex.messageClaimDue({ now: T0 + 10, limit: 1, leaseUntil: T0 + 50_000 });
    expect(held?.id).toBe(b1?.id);
    const spread = (limit: number) =>
      ex.messageSpreadDue({
        origin: 'https://b.example.com',
        now: T0 + 10,
        from: T0 + 2_000,
        stepMs: 500,
        tickMs: 1,
        limit,
      });
    expect(await spread(1)).toBe(T0 + 2_000);
    expect(await dueAt(b2)).toBe(T0 + 2_000);
    expect(await dueAt(b3)).toBe(T0 + 3);
    expect(await spread(5)).toBe(T0 + 2_000); // b3 only: b2 is no longer due, b1 is leased
    expect(await dueAt(b3)).toBe(T0 + 2_000);
    const claimed = await ex.messageClaimDue({ now: T0 + 10, limit: 10, leaseUntil: T0 + 60_000 });
    expect(claimed).toEqual([]); // b1 still leased (its lease untouched), the others moved
    expect(await spread(5)).toBeUndefined();
  });
}
