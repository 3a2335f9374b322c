/**
 * The per-origin cap's states (origin-limit.ts): waiting for a slot, congested (waiters go back,
 * claims get the free slots' worth) and stalled. Time is a manual clock moved together with
 * vitest's fake timers, so the watch timer fires exactly when the clock says it should.
 * test/fairness.test.ts checks the same rules end to end with real time and real destinations.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ManualClock } from '../core/clock.js';
import { OriginLimit, type OriginSlot } from './origin-limit.js';

const URL_A = 'http://a.example:8080/x';
const ORIGIN_A = 'http://a.example:8080';
const CAP = 8;
/** What a claim takes of a stalled or paced origin's messages. */
const BACKLOG_ROOM = 10;

describe('OriginLimit', () => {
  let clock: ManualClock;
  let changes: string[];
  let limit: OriginLimit;

  beforeEach(() => {
    vi.useFakeTimers();
    clock = new ManualClock();
    changes = [];
    limit = new OriginLimit({
      cap: CAP,
      congestedMs: 100,
      stallMs: 1_000,
      maxHoldMs: 60_000,
      ratePerSecond: 50,
      failureStreak: 10,
      burst: 10,
      clock,
      onChange: (origin) => changes.push(origin),
    });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  /** Moves the clock and the timers together. */
  async function advance(ms: number): Promise<void> {
    clock.advance(ms);
    await vi.advanceTimersByTimeAsync(ms);
  }

  /** Fills the origin's cap; returns the slots. */
  async function fill(): Promise<number[]> {
    const slots: number[] = [];
    for (let i = 0; i < CAP; i++) slots.push((await limit.acquire(URL_A)) as number);
    return slots;
  }

  it('lets a waiter take the next free slot of a fast origin, which never counts as congested', async () => {
    const slots = await fill();
    const waiting = limit.acquire(URL_A);
    await advance(50);
    limit.release(URL_A, slots[0]!);
    expect(typeof (await waiting)).toBe('number');
    expect(limit.rooms(clock.now(), BACKLOG_ROOM)).toEqual([]);
  });

  it('sends the waiters of a slow origin back once its oldest attempt has run congestedMs', async () => {
    const slots = await fill();
    const results: OriginSlot[] = [];
    for (let i = 0; i < 3; i++) void limit.acquire(URL_A).then((s) => results.push(s));
    await advance(99);
    expect(results).toEqual([]);
    expect(limit.rooms(clock.now(), BACKLOG_ROOM)).toEqual([]);
    await advance(1);
    expect(results).toEqual(['returned', 'returned', 'returned']);
    // Claims now take its free slots' worth: none while it is at its cap.
    expect(limit.rooms(clock.now(), BACKLOG_ROOM)).toEqual([{ origin: ORIGIN_A, room: 0 }]);
    expect(limit.stalled(URL_A, clock.now())).toBe(false);

    // One attempt ends: a slot is free (the engine is told once a batch of slots, a `cap / 8`,
    // is free).
    limit.release(URL_A, slots[0]!);
    expect(limit.rooms(clock.now(), BACKLOG_ROOM)).toEqual([{ origin: ORIGIN_A, room: 1 }]);
    expect(changes).toEqual([ORIGIN_A]);
  });

  it('reports a congested origin once it stalls; claims then take a backlog room of it', async () => {
    await fill();
    void limit.acquire(URL_A);
    await advance(100); // congested
    expect(changes).toEqual([]);
    await advance(900); // stalled: its messages are claimed a few at a time and held back
    expect(changes).toEqual([ORIGIN_A]);
    expect(limit.stalled(URL_A, clock.now())).toBe(true);
    expect(limit.rooms(clock.now(), BACKLOG_ROOM)).toEqual([
      { origin: ORIGIN_A, room: BACKLOG_ROOM },
    ]);
    await advance(5_000);
    expect(changes).toEqual([ORIGIN_A]); // once per stall
  });

  it('stops counting an origin as congested once its attempts are quick again', async () => {
    const slots = await fill();
    void limit.acquire(URL_A);
    await advance(100);
    expect(limit.rooms(clock.now(), BACKLOG_ROOM)).toHaveLength(1);
    // The slow attempts end; new ones start and are still young.
    for (const slot of slots.slice(0, CAP - 1)) limit.release(URL_A, slot);
    await advance(50);
    limit.release(URL_A, slots[CAP - 1]!);
    expect(changes).toContain(ORIGIN_A);
    await limit.acquire(URL_A);
    expect(limit.rooms(clock.now(), BACKLOG_ROOM)).toEqual([]);
  });

  it('sends back the waiters of an origin congested again, not at the stall time it watched for', async () => {
    const old = await fill();
    void limit.acquire(URL_A);
    await advance(100); // congested; a claim's rooms() watches for its stall, at 1,000 ms
    expect(limit.rooms(clock.now(), BACKLOG_ROOM)).toEqual([{ origin: ORIGIN_A, room: 0 }]);
    await advance(50);
    // Its attempts end and new ones start: they are young, so it is not congested any more, and
    // a claim takes more of its messages than its free slots.
    for (const slot of old) {
      limit.release(URL_A, slot);
      await limit.acquire(URL_A);
    }
    await advance(10);
    expect(limit.rooms(clock.now(), BACKLOG_ROOM)).toEqual([]);
    const results: OriginSlot[] = [];
    void limit.acquire(URL_A).then((s) => results.push(s));
    await advance(89);
    expect(results).toEqual([]);
    await advance(1); // the new oldest attempt has run 100 ms
    expect(results).toEqual(['returned']);
  });

  it('gives a paced origin a backlog room until one of its attempts succeeds', () => {
    const now = clock.now();
    for (let i = 0; i < 9; i++) expect(limit.recordAttempt(URL_A, true, now)).toBe(false);
    expect(limit.rooms(now, BACKLOG_ROOM)).toEqual([]);
    expect(limit.recordAttempt(URL_A, true, now)).toBe(true); // the 10th failure in a row
    expect(limit.rooms(now, BACKLOG_ROOM)).toEqual([{ origin: ORIGIN_A, room: BACKLOG_ROOM }]);
    limit.recordAttempt(URL_A, false, now);
    expect(limit.rooms(now, BACKLOG_ROOM)).toEqual([]);
  });

  it('gives a paced, congested origin the smaller of its free slots and the backlog room', async () => {
    const slots = await fill();
    void limit.acquire(URL_A);
    await advance(100); // congested, no free slot
    for (let i = 0; i < 10; i++) limit.recordAttempt(URL_A, true, clock.now());
    expect(limit.rooms(clock.now(), BACKLOG_ROOM)).toEqual([{ origin: ORIGIN_A, room: 0 }]);
    limit.release(URL_A, slots[0]!);
    expect(limit.rooms(clock.now(), BACKLOG_ROOM)).toEqual([{ origin: ORIGIN_A, room: 1 }]);
  });

  it('schedules messages published to a paced or stalled origin, and no other', async () => {
    expect(limit.publishSchedule(clock.now())).toBeUndefined(); // nothing held back
    for (let i = 0; i < 10; i++) limit.recordAttempt(URL_A, true, clock.now());
    const now = clock.now();
    const schedule = limit.publishSchedule(now);
    expect(schedule?.('http://b.example/y')).toBeUndefined();
    // One step (1/50 s) apart, in whole 100 ms ticks, after the ones already handed out.
    const times = Array.from({ length: 10 }, () => schedule?.(URL_A) ?? NaN);
    expect(times[0]).toBeGreaterThan(now);
    expect(times[9]! - times[0]!).toBeGreaterThanOrEqual(100);
    for (const [i, at] of times.entries()) {
      expect(at % 100).toBe(0);
      if (i > 0) expect(at).toBeGreaterThanOrEqual(times[i - 1]!);
    }

    limit.recordAttempt(URL_A, false, now); // paced no more
    expect(limit.publishSchedule(now)).toBeUndefined();
    const URL_C = 'http://c.example/z';
    for (let i = 0; i < CAP; i++) await limit.acquire(URL_C);
    await advance(1_000); // c.example stalls: its messages come after its hold (1 to 1.5 s)
    const later = limit.publishSchedule(clock.now())?.(URL_C) ?? NaN;
    expect(later).toBeGreaterThanOrEqual(clock.now() + 1_000);
    expect(later).toBeLessThanOrEqual(clock.now() + 1_600);
  });
});
