import { describe, expect, it } from 'vitest';
import { parseDuration } from './duration.js';
import { FerryError } from './errors.js';

const S = 1_000;
const M = 60 * S;
const H = 60 * M;
const D = 24 * H;

describe('parseDuration', () => {
  it.each<[string, number]>([
    ['10s', 10 * S],
    ['1m', M],
    ['1h', H],
    ['1d', D],
    ['1d2h30m', D + 2 * H + 30 * M],
    ['1d10h30m5s', D + 10 * H + 30 * M + 5 * S],
    ['0', 0],
    ['0s', 0],
    ['120', 120 * S], // bare integer = seconds
    ['007s', 7 * S],
    ['  5m  ', 5 * M], // surrounding whitespace
    ['104249991d', 104_249_991 * D], // largest whole number of days within the safe range
  ])('%j → %d ms', (text, ms) => {
    expect(parseDuration(text, 'Svc-Delay')).toBe(ms);
  });

  it.each<[string, string]>([
    ['', 'empty value'],
    ['   ', 'empty value'],
    ['-1s', 'cannot be negative'],
    ['-5', 'cannot be negative'],
    ['1.5h', 'decimals are not allowed'],
    ['1.5', 'decimals are not allowed'],
    ['.5s', 'decimals are not allowed'],
    ['10x', 'unknown unit "x"'],
    ['1d1d', 'unit "d" is repeated'],
    ['1h30m1h', 'unit "h" comes after a smaller one'],
    ['1s1m', 'unit "m" comes after a smaller one'],
    ['30m1h', 'write units in the order d, h, m, s'],
    ['10ms', 'unknown unit "ms"'],
    ['1H', 'unknown unit "H"'],
    ['1h30', 'missing unit after 30'],
    ['1h 30m', 'spaces are not allowed'],
    ['1 h', 'spaces are not allowed'],
    ['h', 'unexpected "h"'],
    ['+5s', 'unexpected "+"'],
    ['1e3', 'unknown unit "e"'],
    ['104249992d', 'too large'],
    ['99999999999999999999', 'too large'],
  ])('rejects %j (%s)', (text, problem) => {
    let error: unknown;
    try {
      parseDuration(text, 'Svc-Delay');
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(FerryError);
    expect((error as FerryError).status).toBe(400);
    expect((error as FerryError).message).toContain(`invalid Svc-Delay ${JSON.stringify(text)}`);
    expect((error as FerryError).message).toContain(problem);
  });

  it('with anyOrder, adds up units in any order and repeated (settings stored before)', () => {
    expect(parseDuration('30m1h', 'Svc-Delay', { anyOrder: true })).toBe(H + 30 * M);
    expect(parseDuration('1d1d', 'Svc-Delay', { anyOrder: true })).toBe(2 * D);
    expect(() => parseDuration('1x', 'Svc-Delay', { anyOrder: true })).toThrow(/unknown unit/);
  });
});
