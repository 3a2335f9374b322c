import { describe, expect, it } from 'vitest';
import { addToWindow, burstHeaders, checkDailyQuota, secondOf, utcDayOf } from './rate-limits.js';

const NOW = Date.UTC(2026, 5, 1, 9, 0, 0, 250);
const MIDNIGHT_S = String(Date.UTC(2026, 5, 2) / 1000);

describe('addToWindow', () => {
  it.each([
    ['no count yet', undefined, 1000, { windowStart: 1000, count: 1 }],
    ['same window adds', { windowStart: 1000, count: 4 }, 1000, { windowStart: 1000, count: 5 }],
    [
      'a later window starts over',
      { windowStart: 1000, count: 4 },
      2000,
      { windowStart: 2000, count: 1 },
    ],
    [
      'an earlier one counts in the stored window',
      { windowStart: 2000, count: 4 },
      1000,
      { windowStart: 2000, count: 5 },
    ],
  ])('%s', (_name, stored, windowStart, expected) => {
    expect(addToWindow(stored, windowStart, 1)).toEqual(expected);
  });
});

describe('windows and headers', () => {
  it('a second and a UTC day', () => {
    expect(secondOf(NOW)).toBe(NOW - 250);
    expect(utcDayOf(NOW)).toEqual({ from: Date.UTC(2026, 5, 1), to: Date.UTC(2026, 5, 2) });
  });
  it('burst headers reset at the next second and never show a negative remainder', () => {
    expect(burstHeaders(3, { windowStart: NOW - 250, count: 5 })).toEqual({
      'Burst-RateLimit-Limit': '3',
      'Burst-RateLimit-Remaining': '0',
      'Burst-RateLimit-Reset': String((NOW - 250) / 1000 + 1),
    });
  });
});

describe('checkDailyQuota', () => {
  const limits = { max_requests_per_day: 4, max_requests_per_day_hard: 6 };
  const headers = (limit: number, remaining: number) => ({
    'RateLimit-Limit': String(limit),
    'RateLimit-Remaining': String(remaining),
    'RateLimit-Reset': MIDNIGHT_S,
  });
  it.each([
    [
      'within the soft quota',
      0,
      1,
      { kind: 'accepted', headers: headers(4, 3), softExceeded: false },
    ],
    ['reaching it', 3, 1, { kind: 'accepted', headers: headers(4, 0), softExceeded: false }],
    [
      'beyond it, within the hard one',
      4,
      2,
      { kind: 'accepted', headers: headers(4, 0), softExceeded: true },
    ],
    ['a fan-out beyond the hard one', 5, 2, { kind: 'refused', headers: headers(6, 1) }],
  ])('%s', (_name, used, adding, expected) => {
    expect(checkDailyQuota({ limits, used, adding, now: NOW })).toMatchObject(expected);
  });
  it('names the limit and its value; 0 means no quota', () => {
    const refused = checkDailyQuota({ limits, used: 6, adding: 1, now: NOW });
    expect(refused.kind === 'refused' && refused.message).toBe(
      'daily quota exceeded: max_requests_per_day_hard is 6 messages per UTC day, 6 created today, this request would create 1',
    );
    const none = { max_requests_per_day: 0, max_requests_per_day_hard: 0 };
    expect(checkDailyQuota({ limits: none, used: 1e9, adding: 1, now: NOW })).toEqual({
      kind: 'unlimited',
    });
    const hardOnly = { max_requests_per_day: 0, max_requests_per_day_hard: 2 };
    expect(checkDailyQuota({ limits: hardOnly, used: 1, adding: 1, now: NOW }).kind).toBe(
      'unlimited',
    );
    expect(checkDailyQuota({ limits: hardOnly, used: 2, adding: 1, now: NOW }).kind).toBe(
      'refused',
    );
  });
});
