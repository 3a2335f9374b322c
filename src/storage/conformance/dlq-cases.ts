/** The dead-letter queue: insert, get, list (filters, paging), delete, expiry. */
import { expect, it } from 'vitest';
import { newDlqId, newId } from '../../core/ids.js';
import type { DlqEntry } from '../../core/types.js';
import type { Executor, RecordFilter } from '../driver.js';
import { BINARY_BODY, makeDlqEntry, makeFullMessage, makeMessage, plain, T0 } from './fixtures.js';
import type { SuiteContext } from './suite.js';

/** Three entries of one account created at T0+1…T0+3, and a copy of them in another account. */
async function seed(ex: Executor) {
  const accountId = newId('acct');
  const full = makeFullMessage(accountId);
  const plainMessage = makeMessage(accountId);
  const entries: DlqEntry[] = [
    makeDlqEntry(full, {
      createdAt: T0 + 1,
      responseStatus: 500,
      responseHeader: { 'Content-Type': ['text/plain'] },
      responseBody: BINARY_BODY,
    }),
    makeDlqEntry(plainMessage, { createdAt: T0 + 2, error: 'timeout after 15000 ms' }),
    makeDlqEntry(makeMessage(accountId, { url: 'https://other.example.org/x' }), {
      createdAt: T0 + 3,
      responseStatus: 404,
    }),
  ];
  await ex.dlqInsertMany({ entries });
  const otherAccountId = newId('acct');
  await ex.dlqInsertMany({
    entries: entries.map((e) =>
      makeDlqEntry({ ...e.message, accountId: otherAccountId }, { createdAt: e.createdAt }),
    ),
  });
  return { accountId, otherAccountId, full, plainMessage, entries };
}

type Seeded = Awaited<ReturnType<typeof seed>>;

/** `expected` lists indexes into the seeded entries, newest first. */
const FILTER_CASES: { name: string; filter: (s: Seeded) => RecordFilter; expected: number[] }[] = [
  { name: 'none', filter: () => ({}), expected: [2, 1, 0] },
  { name: 'messageIds', filter: (s) => ({ messageIds: [s.plainMessage.id] }), expected: [1] },
  {
    name: 'dlqIds',
    filter: (s) => ({ dlqIds: [s.entries[0]?.dlqId ?? '', s.entries[2]?.dlqId ?? ''] }),
    expected: [2, 0],
  },
  { name: 'urls', filter: () => ({ urls: ['https://other.example.org/x'] }), expected: [2] },
  { name: 'hosts', filter: () => ({ hosts: ['api.example.com:8080'] }), expected: [0] },
  { name: 'paths', filter: () => ({ paths: ['/hook', '/x'] }), expected: [2, 1] },
  { name: 'topicNames', filter: () => ({ topicNames: ['orders'] }), expected: [0] },
  { name: 'queueNames', filter: () => ({ queueNames: ['fifo-1'] }), expected: [0] },
  {
    name: 'scheduleIds',
    filter: (s) => ({ scheduleIds: [s.full.scheduleId ?? ''] }),
    expected: [0],
  },
  { name: 'labels', filter: () => ({ labels: ['red'] }), expected: [0] },
  { name: 'flowControlKeys', filter: () => ({ flowControlKeys: ['fc-key'] }), expected: [0] },
  { name: 'callerIps', filter: () => ({ callerIps: ['203.0.113.7'] }), expected: [2, 1] },
  { name: 'responseStatuses', filter: () => ({ responseStatuses: [404, 500] }), expected: [2, 0] },
  {
    name: 'fromDate/toDate on the DLQ entry time, inclusive',
    filter: () => ({ fromDate: T0 + 2, toDate: T0 + 3 }),
    expected: [2, 1],
  },
  { name: 'states (DLQ entries have none)', filter: () => ({ states: ['FAILED'] }), expected: [] },
  {
    name: 'AND across fields',
    filter: () => ({ callerIps: ['203.0.113.7'], responseStatuses: [404] }),
    expected: [2],
  },
];

export function dlqCases(ctx: SuiteContext): void {
  it('dlqGet returns the whole entry: message with binary body and spec, response', async () => {
    const ex = ctx.executor();
    const { accountId, entries } = await seed(ex);
    for (const entry of entries) {
      expect(plain(await ex.dlqGet({ accountId, dlqId: entry.dlqId }))).toEqual(plain(entry));
    }
    const got = await ex.dlqGet({ accountId, dlqId: entries[1]?.dlqId ?? '' });
    for (const key of ['responseStatus', 'responseHeader', 'responseBody'] as const) {
      expect(got?.[key], key).toBeUndefined();
    }
    expect(got?.message.topicName).toBeUndefined();
  });

  it('dlqGet is scoped by account and undefined for unknown ids', async () => {
    const ex = ctx.executor();
    const { otherAccountId, entries } = await seed(ex);
    expect(await ex.dlqGet({ accountId: otherAccountId, dlqId: entries[0]?.dlqId ?? '' })).toBe(
      undefined,
    );
    expect(await ex.dlqGet({ accountId: otherAccountId, dlqId: newDlqId() })).toBeUndefined();
  });

  for (const testCase of FILTER_CASES) {
    it(`dlqList filter: ${testCase.name}`, async () => {
      const ex = ctx.executor();
      const seeded = await seed(ex);
      const page = await ex.dlqList({
        accountId: seeded.accountId,
        filter: testCase.filter(seeded),
        count: 100,
      });
      expect(page.cursor).toBeUndefined();
      expect(plain(page.items)).toEqual(plain(testCase.expected.map((i) => seeded.entries[i])));
    });
  }

  it('dlqList pages newest first by dlqId: 7 entries by 3 give 3, 3, 1', async () => {
    const ex = ctx.executor();
    const accountId = newId('acct');
    const entries = Array.from({ length: 7 }, (_, i) =>
      makeDlqEntry(makeMessage(accountId), { createdAt: T0 + i * 1_000 }),
    );
    await ex.dlqInsertMany({ entries });
    const seen: DlqEntry[][] = [];
    let cursor: string | undefined;
    do {
      const page = await ex.dlqList({
        accountId,
        filter: {},
        count: 3,
        ...(cursor ? { cursor } : {}),
      });
      seen.push(page.items);
      cursor = page.cursor;
      if (seen.length > 3) throw new Error('too many pages');
    } while (cursor !== undefined);
    expect(seen.map((p) => p.length)).toEqual([3, 3, 1]);
    expect(seen.flat().map((e) => e.dlqId)).toEqual([...entries].reverse().map((e) => e.dlqId));
  });

  it('dlqDeleteMany deletes the account’s given entries and counts them', async () => {
    const ex = ctx.executor();
    const { accountId, otherAccountId, entries } = await seed(ex);
    const [first, second, third] = entries.map((e) => e.dlqId);
    if (!first || !second || !third) throw new Error('not seeded');
    // Another account's ids and unknown ids are not deleted.
    expect(await ex.dlqDeleteMany({ accountId: otherAccountId, dlqIds: [first] })).toBe(0);
    expect(await ex.dlqDeleteMany({ accountId, dlqIds: [first, third, newDlqId()] })).toBe(2);
    expect(await ex.dlqDeleteMany({ accountId, dlqIds: [first] })).toBe(0);
    expect(await ex.dlqDeleteMany({ accountId, dlqIds: [] })).toBe(0);
    const { items } = await ex.dlqList({ accountId, filter: {}, count: 10 });
    expect(items.map((e) => e.dlqId)).toEqual([second]);
  });

  it('dlqDeleteExpired deletes entries with expiresAt <= now, at most limit per call', async () => {
    const ex = ctx.executor();
    // Pruning is global, so this case works in 1970, where no other case writes.
    const now = Date.UTC(1970, 0, 2);
    await ex.dlqDeleteExpired({ now, limit: 1_000_000 });
    const accountId = newId('acct');
    const entry = (expiresAt: number): DlqEntry =>
      makeDlqEntry(makeMessage(accountId), { createdAt: 1_000, expiresAt });
    const expired = [entry(now - 2), entry(now - 1), entry(now)];
    const kept = entry(now + 1);
    await ex.dlqInsertMany({ entries: [...expired, kept] });

    expect(await ex.dlqDeleteExpired({ now, limit: 2 })).toBe(2);
    expect(await ex.dlqDeleteExpired({ now, limit: 2 })).toBe(1);
    expect(await ex.dlqDeleteExpired({ now, limit: 2 })).toBe(0);
    const { items } = await ex.dlqList({ accountId, filter: {}, count: 10 });
    expect(items.map((e) => e.dlqId)).toEqual([kept.dlqId]);
  });
}
