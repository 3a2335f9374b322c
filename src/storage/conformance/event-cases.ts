/** The events log: insert, list (filters, paging, joined CREATED header/body), pruning. */
import { expect, it } from 'vitest';
import { newDlqId, newId, newMessageId } from '../../core/ids.js';
import type { EventRecord } from '../../core/types.js';
import type { Executor, RecordFilter } from '../driver.js';
import { BINARY_BODY, makeEvent, makeFullMessage, makeMessage, plain, T0 } from './fixtures.js';
import type { SuiteContext } from './suite.js';

/** Two messages and six events of one account, plus the same for another account. */
async function seed(ex: Executor) {
  const accountId = newId('acct');
  const a = makeFullMessage(accountId);
  const b = makeMessage(accountId);
  const events: EventRecord[] = [
    makeEvent(a, { time: T0 }),
    makeEvent(b, { time: T0 + 1 }),
    makeEvent(a, { state: 'ACTIVE', time: T0 + 2 }),
    makeEvent(a, {
      state: 'ERROR',
      time: T0 + 3,
      error: 'HTTP 500',
      nextDeliveryTime: T0 + 60_000,
      responseStatus: 500,
      responseHeader: { 'Content-Type': ['text/plain'], 'X-Many': ['1', '2'] },
      responseBody: BINARY_BODY,
    }),
    makeEvent(b, { state: 'DELIVERED', time: T0 + 4, responseStatus: 200 }),
    makeEvent(a, { state: 'FAILED', time: T0 + 5, retried: 5, responseStatus: 500 }),
  ];
  await ex.eventInsertMany({ events });
  // The same events for another account: its rows must never show up.
  const otherA = { ...a, id: newMessageId(), accountId: newId('acct') };
  await ex.eventInsertMany({
    events: events.map((e) => ({
      ...e,
      accountId: otherA.accountId,
      messageId: e.messageId === a.id ? otherA.id : newMessageId(),
    })),
  });
  return { accountId, a, b, events };
}

type Seeded = Awaited<ReturnType<typeof seed>>;

/** Filter cases; `expected` lists indexes into the seeded events, newest first. */
const FILTER_CASES: { name: string; filter: (s: Seeded) => RecordFilter; expected: number[] }[] = [
  { name: 'none', filter: () => ({}), expected: [5, 4, 3, 2, 1, 0] },
  { name: 'messageIds', filter: (s) => ({ messageIds: [s.b.id] }), expected: [4, 1] },
  { name: 'states', filter: () => ({ states: ['CREATED'] }), expected: [1, 0] },
  { name: 'states (OR)', filter: () => ({ states: ['ERROR', 'FAILED'] }), expected: [5, 3] },
  { name: 'urls', filter: (s) => ({ urls: [s.b.url] }), expected: [4, 1] },
  { name: 'hosts', filter: () => ({ hosts: ['api.example.com:8080'] }), expected: [5, 3, 2, 0] },
  { name: 'paths', filter: () => ({ paths: ['/hook'] }), expected: [4, 1] },
  { name: 'topicNames', filter: () => ({ topicNames: ['orders'] }), expected: [5, 3, 2, 0] },
  { name: 'queueNames', filter: () => ({ queueNames: ['fifo-1'] }), expected: [5, 3, 2, 0] },
  {
    name: 'scheduleIds',
    filter: (s) => ({ scheduleIds: [s.a.scheduleId ?? ''] }),
    expected: [5, 3, 2, 0],
  },
  { name: 'labels', filter: () => ({ labels: ['nope', 'blue'] }), expected: [5, 3, 2, 0] },
  { name: 'labels without a match', filter: () => ({ labels: ['nope'] }), expected: [] },
  {
    name: 'flowControlKeys',
    filter: () => ({ flowControlKeys: ['fc-key'] }),
    expected: [5, 3, 2, 0],
  },
  { name: 'callerIps', filter: (s) => ({ callerIps: [s.b.callerIp] }), expected: [4, 1] },
  { name: 'responseStatuses', filter: () => ({ responseStatuses: [500] }), expected: [5, 3] },
  {
    name: 'responseStatuses (OR)',
    filter: () => ({ responseStatuses: [200, 500] }),
    expected: [5, 4, 3],
  },
  {
    name: 'fromDate/toDate on the event time, inclusive',
    filter: () => ({ fromDate: T0 + 2, toDate: T0 + 4 }),
    expected: [4, 3, 2],
  },
  { name: 'dlqIds (events have none)', filter: () => ({ dlqIds: [newDlqId()] }), expected: [] },
  {
    name: 'AND across fields',
    filter: (s) => ({ messageIds: [s.a.id], states: ['ERROR', 'DELIVERED'] }),
    expected: [3],
  },
];

export function eventCases(ctx: SuiteContext): void {
  it('eventList returns every field, newest first, with the CREATED header/body on all', async () => {
    const ex = ctx.executor();
    const { accountId, a, b, events } = await seed(ex);
    const page = await ex.eventList({ accountId, filter: {}, count: 100 });
    expect(page.cursor).toBeUndefined();

    const ids = page.items.map((e) => e.id ?? 0);
    expect(ids.every((id) => Number.isInteger(id))).toBe(true);
    expect([...ids].sort((x, y) => y - x)).toEqual(ids);

    const expected = [...events].reverse().map((e) => {
      const message = e.messageId === a.id ? a : b;
      return { ...e, id: undefined, header: message.spec.headers, body: message.body };
    });
    expect(plain(page.items.map((e) => ({ ...e, id: undefined })))).toEqual(plain(expected));
  });

  it("a redacted body: every event of the message shows the CREATED event's bodyRedacted", async () => {
    const ex = ctx.executor();
    const message = makeMessage(newId('acct'));
    const redacted = `REDACTED:${'ab'.repeat(32)}`;
    const created = makeEvent(message, {
      header: { Authorization: [`REDACTED:${'cd'.repeat(32)}`] },
      bodyRedacted: redacted,
    });
    delete created.body;
    await ex.eventInsertMany({
      events: [created, makeEvent(message, { state: 'ACTIVE', time: T0 + 1 })],
    });
    const { items } = await ex.eventList({ accountId: message.accountId, filter: {}, count: 10 });
    expect(items.map((e) => e.state)).toEqual(['ACTIVE', 'CREATED']);
    for (const event of items) {
      expect(event.bodyRedacted).toBe(redacted);
      expect(event.body).toBeUndefined();
      expect(event.header).toEqual(created.header);
    }
  });

  it('optional fields are absent, and header/body too without a CREATED event', async () => {
    const ex = ctx.executor();
    const message = makeMessage(newId('acct'));
    const event = makeEvent(message, { state: 'ACTIVE' });
    await ex.eventInsertMany({ events: [event] });
    const { items } = await ex.eventList({ accountId: message.accountId, filter: {}, count: 10 });
    expect(items).toHaveLength(1);
    const [got] = items;
    expect(plain({ ...got, id: undefined })).toEqual(plain({ ...event, id: undefined }));
    for (const key of [
      'topicName',
      'endpointName',
      'queueName',
      'scheduleId',
      'labels',
      'flowControlKey',
      'header',
      'body',
      'bodyRedacted',
      'error',
      'nextDeliveryTime',
      'responseStatus',
      'responseHeader',
      'responseBody',
    ] as const) {
      expect(got?.[key], key).toBeUndefined();
    }
  });

  for (const testCase of FILTER_CASES) {
    it(`eventList filter: ${testCase.name}`, async () => {
      const ex = ctx.executor();
      const seeded = await seed(ex);
      const { items } = await ex.eventList({
        accountId: seeded.accountId,
        filter: testCase.filter(seeded),
        count: 100,
      });
      const expected = testCase.expected.map((i) => seeded.events[i]);
      expect(items.map((e) => [e.messageId, e.state, e.time])).toEqual(
        expected.map((e) => [e?.messageId, e?.state, e?.time]),
      );
    });
  }

  it('eventList pages 25 events by 10: 10, 10, 5, no cursor on the last page', async () => {
    const ex = ctx.executor();
    const message = makeMessage(newId('acct'));
    const events = Array.from({ length: 25 }, (_, i) =>
      makeEvent(message, { state: i === 0 ? 'CREATED' : 'RETRY', time: T0 + i, retried: i }),
    );
    await ex.eventInsertMany({ events });
    const accountId = message.accountId;

    const pages: EventRecord[][] = [];
    let cursor: string | undefined;
    do {
      const page = await ex.eventList({
        accountId,
        filter: {},
        count: 10,
        ...(cursor ? { cursor } : {}),
      });
      pages.push(page.items);
      cursor = page.cursor;
      if (pages.length > 3) throw new Error('too many pages');
    } while (cursor !== undefined);

    expect(pages.map((p) => p.length)).toEqual([10, 10, 5]);
    expect(pages.flat().map((e) => e.retried)).toEqual(
      Array.from({ length: 25 }, (_, i) => 24 - i),
    );
    expect(pages.flat().every((e) => e.body !== undefined)).toBe(true);
  });

  it('eventList gives no cursor when the rows end exactly at a page boundary', async () => {
    const ex = ctx.executor();
    const message = makeMessage(newId('acct'));
    const events = Array.from({ length: 20 }, (_, i) => makeEvent(message, { time: T0 + i }));
    await ex.eventInsertMany({ events });
    const first = await ex.eventList({ accountId: message.accountId, filter: {}, count: 10 });
    expect(first.items).toHaveLength(10);
    expect(first.cursor).toBeDefined();
    const second = await ex.eventList({
      accountId: message.accountId,
      filter: {},
      count: 10,
      ...(first.cursor ? { cursor: first.cursor } : {}),
    });
    expect(second.items).toHaveLength(10);
    expect(second.cursor).toBeUndefined();
  });

  it('eventList paging keeps the filter', async () => {
    const ex = ctx.executor();
    const message = makeMessage(newId('acct'));
    const events = Array.from({ length: 12 }, (_, i) =>
      makeEvent(message, { state: i % 2 === 0 ? 'RETRY' : 'ERROR', time: T0 + i, retried: i }),
    );
    await ex.eventInsertMany({ events });
    const query = {
      accountId: message.accountId,
      filter: { states: ['ERROR' as const] },
      count: 4,
    };
    const first = await ex.eventList(query);
    const second = await ex.eventList({
      ...query,
      ...(first.cursor ? { cursor: first.cursor } : {}),
    });
    expect(first.items.map((e) => e.retried)).toEqual([11, 9, 7, 5]);
    expect(second.items.map((e) => e.retried)).toEqual([3, 1]);
    expect(second.cursor).toBeUndefined();
  });

  it('an outcome row that carries its ACTIVE event (activeAt) lists as both, ACTIVE just before it', async () => {
    const ex = ctx.executor();
    const a = makeFullMessage(newId('acct'));
    const accountId = a.accountId;
    const created = makeEvent(a, { time: T0 });
    const error = makeEvent(a, {
      state: 'ERROR',
      time: T0 + 3,
      error: 'HTTP 500',
      nextDeliveryTime: T0 + 60_000,
      responseStatus: 500,
      responseHeader: { 'Content-Type': ['text/plain'] },
      responseBody: BINARY_BODY,
    });
    const retry = makeEvent(a, { state: 'RETRY', time: T0 + 3, retried: 1 });
    await ex.eventInsertMany({ events: [created, { ...error, activeAt: T0 + 2 }, retry] });
    const active = makeEvent(a, { state: 'ACTIVE', time: T0 + 2 });
    const withCreated = (e: EventRecord) => ({ ...e, header: a.spec.headers, body: a.body });

    const all = await ex.eventList({ accountId, filter: {}, count: 10 });
    expect(plain(all.items.map((e) => ({ ...e, id: undefined })))).toEqual(
      plain([retry, error, active, created].map(withCreated)),
    );

    // One event a page: the two events of the ERROR row come on pages of their own.
    const pages: EventRecord[] = [];
    let cursor: string | undefined;
    do {
      const page = await ex.eventList({
        accountId,
        filter: {},
        count: 1,
        ...(cursor && { cursor }),
      });
      pages.push(...page.items);
      cursor = page.cursor;
      if (pages.length > 4) throw new Error('too many pages');
    } while (cursor !== undefined);
    expect(pages.map((e) => e.state)).toEqual(['RETRY', 'ERROR', 'ACTIVE', 'CREATED']);

    const states = async (filter: RecordFilter) =>
      (await ex.eventList({ accountId, filter, count: 10 })).items.map((e) => e.state);
    expect(await states({ states: ['ACTIVE'] })).toEqual(['ACTIVE']);
    expect(await states({ states: ['ERROR'] })).toEqual(['ERROR']);
    expect(await states({ responseStatuses: [500] })).toEqual(['ERROR']);
    expect(await states({ fromDate: T0 + 3 })).toEqual(['RETRY', 'ERROR']);
    expect(await states({ fromDate: T0 + 1, toDate: T0 + 2 })).toEqual(['ACTIVE']);
    expect(await states({ messageIds: [a.id], states: ['ACTIVE', 'CREATED'] })).toEqual([
      'ACTIVE',
      'CREATED',
    ]);
  });

  it('eventList of an account without events is empty', async () => {
    expect(
      await ctx.executor().eventList({ accountId: newId('acct'), filter: {}, count: 10 }),
    ).toEqual({ items: [] });
  });

  it('eventDeleteBefore deletes events with time < before, at most limit per call', async () => {
    const ex = ctx.executor();
    // Pruning is global, so this case works in 1970, where no other case writes.
    const before = Date.UTC(1970, 0, 2);
    await ex.eventDeleteBefore({ before, limit: 1_000_000 });
    const message = makeMessage(newId('acct'));
    const old = Array.from({ length: 5 }, (_, i) => makeEvent(message, { time: 1_000 + i }));
    const kept = [makeEvent(message, { time: before }), makeEvent(message, { time: before + 1 })];
    await ex.eventInsertMany({ events: [...old, ...kept] });

    expect(await ex.eventDeleteBefore({ before, limit: 3 })).toBe(3);
    expect(await ex.eventDeleteBefore({ before, limit: 3 })).toBe(2);
    expect(await ex.eventDeleteBefore({ before, limit: 3 })).toBe(0);
    const { items } = await ex.eventList({ accountId: message.accountId, filter: {}, count: 10 });
    expect(items.map((e) => e.time)).toEqual([before + 1, before]);
  });
}
