/**
 * Bulk cancel (`messageDeleteMany`): every filter field, OR within a field, AND across fields,
 * `limit` oldest first, and account isolation. Each case seeds its own two accounts.
 */
import { expect, it } from 'vitest';
import { newId } from '../../core/ids.js';
import type { Message } from '../../core/types.js';
import type { RecordFilter } from '../driver.js';
import { makeMessage, plain, T0 } from './fixtures.js';
import type { SuiteContext } from './suite.js';

type Name = 'a' | 'b' | 'c' | 'd';

/** Four messages that differ in every filterable field; created at T0+1 … T0+4. */
function seed(accountId: string, scheduleId: string): Record<Name, Message> {
  const spec = (labels?: string[], flowControlKey?: string): Message['spec'] => ({
    method: 'POST',
    headers: {},
    ...(labels ? { labels } : {}),
    ...(flowControlKey ? { flowControl: { key: flowControlKey } } : {}),
  });
  return {
    a: makeMessage(accountId, {
      url: 'https://a.example.com/one',
      topicName: 't1',
      spec: spec(['red', 'blue'], 'k1'),
      callerIp: '10.0.0.1',
      createdAt: T0 + 1,
    }),
    b: makeMessage(accountId, {
      url: 'http://b.example.com:8080/two',
      queueName: 'q1',
      spec: spec(['green'], 'k2'),
      callerIp: '10.0.0.2',
      createdAt: T0 + 2,
    }),
    c: makeMessage(accountId, {
      url: 'https://a.example.com/two',
      topicName: 't2',
      scheduleId,
      spec: spec(undefined, undefined),
      callerIp: '10.0.0.1',
      createdAt: T0 + 3,
    }),
    d: makeMessage(accountId, {
      url: 'https://c.example.com/one?x=1',
      queueName: 'q2',
      spec: spec(['blue', '100%_off'], 'k1'),
      callerIp: '10.0.0.3',
      createdAt: T0 + 4,
    }),
  };
}

interface Case {
  name: string;
  filter: (seeded: Record<Name, Message>, scheduleId: string) => RecordFilter;
  limit?: number;
  /** The messages deleted, oldest first. */
  expected: Name[];
}

const CASES: Case[] = [
  { name: 'an empty filter matches all', filter: () => ({}), expected: ['a', 'b', 'c', 'd'] },
  {
    name: 'empty arrays do not filter',
    filter: () => ({ messageIds: [], urls: [], labels: [] }),
    expected: ['a', 'b', 'c', 'd'],
  },
  { name: 'messageIds', filter: (s) => ({ messageIds: [s.c.id, s.a.id] }), expected: ['a', 'c'] },
  {
    name: 'urls (exact)',
    filter: () => ({ urls: ['https://a.example.com/one'] }),
    expected: ['a'],
  },
  {
    name: 'urls with a query string',
    filter: () => ({ urls: ['https://c.example.com/one?x=1'] }),
    expected: ['d'],
  },
  { name: 'hosts', filter: () => ({ hosts: ['a.example.com'] }), expected: ['a', 'c'] },
  { name: 'hosts with a port', filter: () => ({ hosts: ['b.example.com:8080'] }), expected: ['b'] },
  { name: 'paths', filter: () => ({ paths: ['/two'] }), expected: ['b', 'c'] },
  { name: 'topicNames', filter: () => ({ topicNames: ['t1', 't2'] }), expected: ['a', 'c'] },
  { name: 'queueNames', filter: () => ({ queueNames: ['q1'] }), expected: ['b'] },
  { name: 'scheduleIds', filter: (_, id) => ({ scheduleIds: [id] }), expected: ['c'] },
  {
    name: 'labels: any label of a row',
    filter: () => ({ labels: ['blue'] }),
    expected: ['a', 'd'],
  },
  {
    name: 'labels: OR across the given labels',
    filter: () => ({ labels: ['green', 'red'] }),
    expected: ['a', 'b'],
  },
  { name: 'labels: case-sensitive', filter: () => ({ labels: ['RED', 'Blue'] }), expected: [] },
  { name: 'labels: whole labels only', filter: () => ({ labels: ['blu', 'e'] }), expected: [] },
  {
    name: 'labels: LIKE wildcards are literal',
    filter: () => ({ labels: ['%', '100__off'] }),
    expected: [],
  },
  { name: 'labels: with % and _', filter: () => ({ labels: ['100%_off'] }), expected: ['d'] },
  { name: 'flowControlKeys', filter: () => ({ flowControlKeys: ['k1'] }), expected: ['a', 'd'] },
  { name: 'callerIps', filter: () => ({ callerIps: ['10.0.0.1'] }), expected: ['a', 'c'] },
  {
    name: 'fromDate and toDate are inclusive',
    filter: () => ({ fromDate: T0 + 2, toDate: T0 + 3 }),
    expected: ['b', 'c'],
  },
  { name: 'fromDate alone', filter: () => ({ fromDate: T0 + 4 }), expected: ['d'] },
  { name: 'toDate alone', filter: () => ({ toDate: T0 + 1 }), expected: ['a'] },
  {
    name: 'AND across fields',
    filter: () => ({ hosts: ['a.example.com'], paths: ['/two'] }),
    expected: ['c'],
  },
  {
    name: 'a field messages lack (states, dlqIds, responseStatuses) matches nothing',
    filter: () => ({ states: ['CREATED'] }),
    expected: [],
  },
  { name: 'limit deletes the oldest first', filter: () => ({}), limit: 2, expected: ['a', 'b'] },
  {
    name: 'limit applies after the filter',
    filter: () => ({ labels: ['blue', 'green'] }),
    limit: 2,
    expected: ['a', 'b'],
  },
];

export function bulkCancelCases(ctx: SuiteContext): void {
  for (const testCase of CASES) {
    it(`filter: ${testCase.name}`, async () => {
      const ex = ctx.executor();
      const [accountId, otherAccountId, scheduleId] = [newId('acct'), newId('acct'), newId('scd')];
      const mine = seed(accountId, scheduleId);
      const theirs = seed(otherAccountId, scheduleId);
      // Inserted newest first, so "oldest first" cannot come from insertion order.
      await ex.messageInsertMany({ messages: Object.values(mine).reverse() });
      await ex.messageInsertMany({ messages: Object.values(theirs) });

      const deleted = await ex.messageDeleteMany({
        accountId,
        filter: testCase.filter(mine, scheduleId),
        ...(testCase.limit === undefined ? {} : { limit: testCase.limit }),
      });
      expect(plain(deleted)).toEqual(plain(testCase.expected.map((name) => mine[name])));

      for (const [name, message] of Object.entries(mine) as [Name, Message][]) {
        const kept = await ex.messageGet({ accountId, id: message.id });
        expect(kept === undefined, `message ${name} deleted`).toBe(
          testCase.expected.includes(name),
        );
      }
      // Another account's rows never match.
      for (const message of Object.values(theirs)) {
        expect(await ex.messageGet({ accountId: otherAccountId, id: message.id })).toBeDefined();
      }
    });
  }

  it('afterId: in chunks by id, each after the last id of the one before, every match once', async () => {
    const ex = ctx.executor();
    const [accountId, scheduleId] = [newId('acct'), newId('scd')];
    const mine = seed(accountId, scheduleId);
    await ex.messageInsertMany({ messages: Object.values(mine) });
    const byId = Object.values(mine)
      .map((m) => m.id)
      .sort();
    const chunk = async (afterId: string) =>
      (await ex.messageDeleteMany({ accountId, filter: {}, limit: 3, afterId }))
        .map((m) => m.id)
        .sort();
    // Not compared with JavaScript's order of the ids: PostgreSQL's follows the collation.
    const first = await chunk('');
    expect(first).toHaveLength(3);
    const last = first.reduce((max, id) => (id > max ? id : max));
    expect(await chunk(last)).toEqual(byId.filter((id) => !first.includes(id)));
    expect(await chunk('')).toEqual([]);
  });

  it('returns nothing for an account without messages', async () => {
    expect(
      await ctx.executor().messageDeleteMany({ accountId: newId('acct'), filter: {} }),
    ).toEqual([]);
  });
}
