import { describe, expect, it } from 'vitest';
import { FerryError } from './errors.js';
import { isDotSegment, refuseDotSegment } from './names.js';

describe('refuseDotSegment', () => {
  it.each(['.', '..'])('refuses %o with a 400 naming the field', (name) => {
    expect(isDotSegment(name)).toBe(true);
    let error: unknown;
    try {
      refuseDotSegment(name, 'Svc-Schedule-Id');
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(FerryError);
    expect((error as FerryError).status).toBe(400);
    expect((error as FerryError).message).toMatch(
      new RegExp(`^invalid Svc-Schedule-Id "${name.replace(/\./g, '\\.')}": "\\." and "\\.\\." `),
    );
  });

  it.each(['...', '.a', 'a.', 'a..b', '.hidden', 'v1.2', '-', '_'])('accepts %o', (name) => {
    expect(isDotSegment(name)).toBe(false);
    expect(refuseDotSegment(name, 'queueName')).toBe(name);
  });
});
