import { describe, expect, it } from 'vitest';
import { bodyMaker } from './body.js';

describe('bodyMaker', () => {
  it('pads each body to exactly the bytes asked for, keeping its beginning', () => {
    const body = bodyMaker(1024);
    for (const begin of ['message 1', 'message 19999', `${Date.now() + 0.123}`]) {
      const text = body(begin);
      expect(Buffer.byteLength(text)).toBe(1024);
      expect(text.startsWith(`${begin} x`)).toBe(true);
    }
  });

  it('keeps the beginning whole when it is longer than the size', () => {
    expect(bodyMaker(32)('message 12345678901234567890123456789')).toBe(
      'message 12345678901234567890123456789 ',
    );
  });

  it('by default adds 100 x to the beginning, as runs before the option did', () => {
    expect(bodyMaker()('message 7')).toBe(`message 7 ${'x'.repeat(100)}`);
  });
});
