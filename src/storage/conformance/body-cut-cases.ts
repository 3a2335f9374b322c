/**
 * Lists cut long bodies in SQL (`bodyCut`): the first bytes, with the whole length in
 * `bodySize`; bodies within the cut (empty ones too) come whole and without a size.
 */
import { expect, it } from 'vitest';
import { newId } from '../../core/ids.js';
import { makeDlqEntry, makeEvent, makeMessage, T0 } from './fixtures.js';
import { makeSchedule } from './schedule-cases.js';
import { makeRun } from './workflow-cases.js';
import type { SuiteContext } from './suite.js';

/** 1,000 bytes that are not valid UTF-8 at every cut, so bytes are compared, not text. */
const LONG = Buffer.from(Array.from({ length: 1_000 }, (_, i) => (i * 7 + 0x80) % 256));
const SHORT = Buffer.from('short');
const EMPTY = Buffer.alloc(0);

const bytes = (value: Uint8Array | undefined): number[] | undefined =>
  value === undefined ? undefined : [...value];

export function bodyCutCases(ctx: SuiteContext): void {
  it('eventList cuts the joined CREATED body and the response body; bodySize gives the length', async () => {
    const ex = ctx.executor();
    const accountId = newId('acct');
    const long = makeMessage(accountId, { body: LONG });
    const short = makeMessage(accountId, { body: SHORT, createdAt: T0 + 1 });
    const empty = makeMessage(accountId, { body: EMPTY, createdAt: T0 + 2 });
    await ex.eventInsertMany({
      events: [
        makeEvent(long),
        makeEvent(short),
        makeEvent(empty),
        makeEvent(long, { state: 'ERROR', time: T0 + 3, responseStatus: 500, responseBody: LONG }),
      ],
    });
    const { items } = await ex.eventList({ accountId, filter: {}, count: 10, bodyCut: 10 });
    const [error, emptyCreated, shortCreated, longCreated] = items;
    // The ERROR event shows its message's CREATED body, cut like the CREATED event's own.
    for (const event of [error, longCreated]) {
      expect(bytes(event?.body)).toEqual([...LONG.subarray(0, 10)]);
      expect(event?.bodySize).toBe(1_000);
    }
    expect(bytes(error?.responseBody)).toEqual([...LONG.subarray(0, 10)]);
    expect(error?.responseBodySize).toBe(1_000);
    expect(bytes(shortCreated?.body)).toEqual([...SHORT]);
    expect(shortCreated?.bodySize).toBeUndefined();
    expect(bytes(emptyCreated?.body) ?? []).toEqual([]);
    expect(emptyCreated?.bodySize).toBeUndefined();
    // Without a cut: whole bodies, no sizes.
    const whole = await ex.eventList({ accountId, filter: {}, count: 10 });
    expect(bytes(whole.items[0]?.body)).toEqual([...LONG]);
    expect(bytes(whole.items[0]?.responseBody)).toEqual([...LONG]);
    expect(whole.items[0]?.bodySize).toBeUndefined();
    // A cut of 0 reads no body bytes at all but still tells the length.
    const none = await ex.eventList({ accountId, filter: {}, count: 1, bodyCut: 0 });
    expect(bytes(none.items[0]?.body) ?? []).toEqual([]);
    expect(none.items[0]?.bodySize).toBe(1_000);
  });

  it('dlqList cuts message and response bodies; dlqGet returns them whole', async () => {
    const ex = ctx.executor();
    const accountId = newId('acct');
    const long = makeDlqEntry(makeMessage(accountId, { body: LONG }), {
      responseStatus: 500,
      responseBody: LONG,
    });
    const empty = makeDlqEntry(makeMessage(accountId, { body: EMPTY }), { createdAt: T0 + 1 });
    await ex.dlqInsertMany({ entries: [long, empty] });
    const { items } = await ex.dlqList({ accountId, filter: {}, count: 10, bodyCut: 16 });
    const [emptyItem, longItem] = items;
    expect(bytes(longItem?.message.body)).toEqual([...LONG.subarray(0, 16)]);
    expect(longItem?.bodySize).toBe(1_000);
    expect(bytes(longItem?.responseBody)).toEqual([...LONG.subarray(0, 16)]);
    expect(longItem?.responseBodySize).toBe(1_000);
    expect(bytes(emptyItem?.message.body)).toEqual([]);
    expect(emptyItem?.bodySize).toBeUndefined();
    const got = await ex.dlqGet({ accountId, dlqId: long.dlqId });
    expect(bytes(got?.message.body)).toEqual([...LONG]);
    expect(got?.bodySize).toBeUndefined();
  });

  it('workflowStepList and scheduleList cut bodies when asked', async () => {
    const ex = ctx.executor();
    const accountId = newId('acct');
    const run = makeRun(accountId);
    await ex.workflowRunInsert({ run });
    for (const body of [LONG, SHORT]) {
      await ex.workflowStepAppend({
        step: {
          accountId,
          runId: run.runId,
          seq: 0,
          messageId: newId('msg'),
          callType: 'step',
          body,
          createdAt: T0,
        },
      });
    }
    const steps = await ex.workflowStepList({ accountId, runId: run.runId, bodyCut: 5 });
    expect(steps.map((s) => [bytes(s.body), s.bodySize])).toEqual([
      [[...LONG.subarray(0, 5)], 1_000],
      [[...SHORT], undefined],
    ]);
    const whole = await ex.workflowStepList({ accountId, runId: run.runId });
    expect(bytes(whole[0]?.body)).toEqual([...LONG]);

    const schedule = makeSchedule(accountId, { body: LONG });
    await ex.scheduleUpsert({ schedule, maxSchedules: 10 });
    const [listed] = await ex.scheduleList({ accountId, bodyCut: 7 });
    expect([bytes(listed?.body), listed?.bodySize]).toEqual([[...LONG.subarray(0, 7)], 1_000]);
    const got = await ex.scheduleGet({ accountId, id: schedule.id });
    expect([bytes(got?.body), got?.bodySize]).toEqual([[...LONG], undefined]);
  });
}
