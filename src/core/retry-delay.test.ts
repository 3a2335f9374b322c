import { describe, expect, it } from 'vitest';
import { FerryError } from './errors.js';
import { compileRetryDelay, MAX_RETRY_DELAY_DEPTH, MAX_RETRY_DELAY_LENGTH } from './retry-delay.js';

const FIELD = 'Svc-Retry-Delay';

describe('compileRetryDelay: evaluation', () => {
  it.each<[string, number, number]>([
    ['1000', 0, 1000],
    ['1000 * (1 + retried)', 0, 1000],
    ['1000 * (1 + retried)', 2, 3000],
    ['pow(2, retried) * 1000', 3, 8000],
    ['max(1000, pow(2, retried) * 100)', 1, 1000],
    ['max(1000, pow(2, retried) * 100)', 5, 3200],
    ['min(retried, 2)', 7, 2],
    ['exp(0)', 0, 1],
    ['sqrt(16)', 0, 4],
    ['abs(-3)', 0, 3],
    ['floor(2.7)', 0, 2],
    ['ceil(2.1)', 0, 3],
    ['round(2.5)', 0, 3],
    ['2 + 3 * 4', 0, 14], // precedence
    ['(2 + 3) * 4', 0, 20],
    ['10 - 4 - 3', 0, 3], // left associative
    ['7 % 4', 0, 3],
    ['9 / 2', 0, 4.5],
    ['-retried', 4, -4],
    ['+retried', 4, 4],
    ['-(-1)', 0, 1],
    ['1e3', 0, 1000],
    ['.5 * 4', 0, 2],
    ['  retried  ', 1, 1],
  ])('%s with retried=%d → %d', (source, retried, expected) => {
    expect(compileRetryDelay(source, FIELD)(retried)).toBe(expected);
  });

  it.each<[string, number, number]>([
    ['0 - 5000', 0, -5000],
    ['1 / retried', 0, Infinity],
    ['pow(10, retried * 400)', 1, Infinity],
    ['sqrt(retried - 2)', 1, NaN],
  ])(
    'does not clamp a part that depends on retried: %s (retried=%d) → %d',
    (source, r, expected) => {
      expect(compileRetryDelay(source, FIELD)(r)).toBe(expected);
    },
  );
});

describe('compileRetryDelay: rejection', () => {
  it.each<[string, string]>([
    ['foo(1)', 'unknown function "foo"'],
    ['constructor(1)', 'unknown function "constructor"'],
    ['retried(1)', 'unknown function "retried"'],
    ['x + 1', 'unknown name "x"'],
    ['pow', 'function "pow" must be called'],
    ['pow(2)', 'pow takes 2 arguments, got 1'],
    ['sqrt(1, 2)', 'sqrt takes 1 argument, got 2'],
    ['min()', 'min takes 2 arguments, got 0'],
    ['Math.pow(2, 3)', 'only the built-in functions can be called'],
    ['retried.constructor', 'property access is not allowed'],
    ['retried["x"]', 'property access is not allowed'],
    ['"1000"', 'strings are not allowed'],
    ['true', 'true is not allowed'],
    ['null', 'null is not allowed'],
    ['this', '"this" is not allowed'],
    ['retried == 1', 'operator "==" is not allowed'],
    ['retried < 1', 'operator "<" is not allowed'],
    ['1 && 2', 'operator "&&" is not allowed'],
    ['2 ** 3', 'operator "**" is not allowed'],
    ['1 | 2', 'operator "|" is not allowed'],
    ['!retried', 'operator "!" is not allowed'],
    ['~retried', 'operator "~" is not allowed'],
    ['retried ? 1 : 2', 'conditional expressions'],
    ['(1, 2)', 'comma expressions are not allowed'],
    ['[1]', 'arrays are not allowed'],
    ['1 2', 'only one expression is allowed'],
    ['1; 2', 'only one expression is allowed'],
    ['', 'empty expression'],
    ['   ', 'empty expression'],
    ['1e999', 'number 1e999 is too large'],
    ['(1 + 2', 'Unclosed ( at character 6'],
    ['1 +', 'Expected expression'],
    ['0x10', 'Variable names cannot start with a number'],
    ['pow(10, 400)', 'pow(…) is not a finite number'],
    ['1 / 0', 'a constant part is not a finite number'],
    ['retried + sqrt(-1)', 'sqrt(…) is not a finite number'],
    ['1e308 * 10', 'a constant part is not a finite number'],
  ])('%j → %s', (source, problem) => {
    expectRejected(source, problem);
  });

  it(`rejects a source longer than ${MAX_RETRY_DELAY_LENGTH} characters`, () => {
    const source = `1${' + 1'.repeat(MAX_RETRY_DELAY_LENGTH / 4)}`;
    expectRejected(source, `longer than ${MAX_RETRY_DELAY_LENGTH} characters`);
  });

  it('rejects 10,000 nested parentheses (longer than the limit)', () => {
    expectRejected(`${'('.repeat(10_000)}1${')'.repeat(10_000)}`, 'longer than');
  });

  it(`rejects nesting deeper than ${MAX_RETRY_DELAY_DEPTH} levels within the length limit`, () => {
    expectRejected(`${'abs('.repeat(200)}1${')'.repeat(200)}`, `nested deeper than`);
    expectRejected(`1${' + 1'.repeat(150)}`, `nested deeper than`);
    expect(compileRetryDelay(`${'('.repeat(400)}1${')'.repeat(400)}`, FIELD)(0)).toBe(1);
  });

  it('accepts a source of exactly the maximum length', () => {
    const source = '1'.padEnd(MAX_RETRY_DELAY_LENGTH, ' ');
    expect(compileRetryDelay(source, FIELD)(0)).toBe(1);
  });
});

function expectRejected(source: string, problem: string): void {
  let error: unknown;
  try {
    compileRetryDelay(source, FIELD);
  } catch (err) {
    error = err;
  }
  expect(error).toBeInstanceOf(FerryError);
  expect((error as FerryError).status).toBe(400);
  expect((error as FerryError).message).toMatch(/^invalid Svc-Retry-Delay "/);
  expect((error as FerryError).message).toContain(problem);
}
