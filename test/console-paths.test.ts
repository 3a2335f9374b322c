/** The console's path segments: names no URL path can carry are never put into one. */
import { describe, expect, it } from 'vitest';
import { segment, unaddressable } from '../console/src/paths.js';

describe('segment', () => {
  it('encodes a name as one path segment', () => {
    expect(segment('a/b?c#d e', 'Queue')).toBe('a%2Fb%3Fc%23d%20e');
    expect(segment('...', 'Queue')).toBe('...');
    expect(segment('v1.2', 'Queue')).toBe('v1.2');
    expect(unaddressable('...')).toBeUndefined();
  });

  it.each(['.', '..'])('refuses %o, naming the field and why', (name) => {
    // encodeURIComponent leaves dots alone, and `%2E` is resolved like `.` by URL parsers.
    expect(new URL(`http://h/v2/schedules/${encodeURIComponent(name)}/pause`).pathname).not.toBe(
      `/v2/schedules/${name}/pause`,
    );
    expect(() => segment(name, 'Schedule')).toThrow(
      `Schedule "${name}" cannot be used: browsers drop "." and ".." from URL paths`,
    );
    expect(unaddressable(name)).toMatch(/^The console cannot act on/);
  });
});
