import { describe, expect, it } from 'vitest';
import { nextReadyAt, planAdmission, rateWindow } from './flow-control.js';

const T0 = 1_000_000;
const gate = { periodSec: 10, rateCount: 0, ratePeriodStart: 0, paused: false };

describe('planAdmission', () => {
  it.each([
    { name: 'free slots', g: { ...gate, parallelism: 3 }, holders: 1, take: 2 },
    { name: 'full', g: { ...gate, parallelism: 2 }, holders: 2, take: 0 },
    { name: 'paused', g: { ...gate, parallelism: 2, paused: true }, holders: 0, take: 0 },
    { name: 'no limits: the round cap', g: gate, holders: 7, take: 500 },
    {
      name: 'rate budget left in the period',
      g: { ...gate, rate: 5, rateCount: 4, ratePeriodStart: T0 - 1_000 },
      holders: 0,
      take: 1,
    },
    {
      name: 'a new period restarts the count',
      g: { ...gate, rate: 5, rateCount: 5, ratePeriodStart: T0 - 10_000 },
      holders: 0,
      take: 5,
    },
  ])('$name', ({ g, holders, take }) => {
    expect(planAdmission(g, holders, T0, 500).take).toBe(take);
  });

  it('a rate window starts at the first admission after the last one ended', () => {
    expect(
      rateWindow({ ...gate, rate: 1, rateCount: 1, ratePeriodStart: T0 - 10_000 }, T0),
    ).toEqual({ rateCount: 0, ratePeriodStart: T0 });
  });
});

describe('nextReadyAt', () => {
  const base = { holders: 0, rateCount: 0, ratePeriodStart: T0, now: T0 };
  it.each([
    { name: 'nothing waits', p: { ...base, gate, nextWaitDue: undefined }, ready: undefined },
    {
      name: 'slots full',
      p: { ...base, gate: { ...gate, parallelism: 1 }, holders: 1, nextWaitDue: T0 },
      ready: undefined,
    },
    {
      name: 'paused',
      p: { ...base, gate: { ...gate, paused: true }, nextWaitDue: T0 },
      ready: undefined,
    },
    {
      name: 'rate spent: the period end',
      p: { ...base, gate: { ...gate, rate: 2 }, rateCount: 2, nextWaitDue: T0 },
      ready: T0 + 10_000,
    },
    { name: 'the next due message', p: { ...base, gate, nextWaitDue: T0 + 5 }, ready: T0 + 5 },
  ])('$name', ({ p, ready }) => {
    expect(nextReadyAt(p)).toBe(ready);
  });
});
