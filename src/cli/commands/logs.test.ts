/** Which failures `ferry logs --follow` waits out, and which end it. */
import { describe, expect, it } from 'vitest';
import { FerryApiError } from '../../sdk/errors.js';
import { unreachable } from './logs.js';

const apiError = (status: number): FerryApiError =>
  new FerryApiError(status, 'x', new Headers(), '{"error":"x"}');

describe('unreachable', () => {
  it('waits out no connection, a 5xx and a 429', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    expect(unreachable(new TypeError('fetch failed', { cause: refused }))).toBe('ECONNREFUSED');
    expect(unreachable(apiError(503))).toBe('HTTP 503');
    expect(unreachable(apiError(500))).toBe('HTTP 500');
    expect(unreachable(apiError(429))).toBe('HTTP 429');
  });

  it('ends on a mistake that asking again will not mend', () => {
    expect(unreachable(apiError(401))).toBeUndefined();
    expect(unreachable(apiError(400))).toBeUndefined();
    expect(unreachable(apiError(404))).toBeUndefined();
    expect(unreachable(new Error('something else'))).toBeUndefined();
  });
});
