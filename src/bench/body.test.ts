import { deflateRawSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { bodyMaker } from './body.js';

describe('bodyMaker', () => {
  it('pads each body to exactly the bytes asked for, keeping its beginning', () => {
    const body = bodyMaker(1024);
    for (const begin of ['message 1', 'message 19999', `${Date.now() + 0.123}`]) {
      const text = body(begin);
      expect(Buffer.byteLength(text)).toBe(1024);
      expect(text.startsWith(`${begin} {"`)).toBe(true);
    }
  });

  it('keeps the beginning whole when it is longer than the size', () => {
    expect(bodyMaker(32)('message 12345678901234567890123456789')).toBe(
      'message 12345678901234567890123456789 ',
    );
  });

  it('pads with the same text in every run, which compresses like a payload, not like one letter', () => {
    const text = bodyMaker(8192)('message 1');
    expect(bodyMaker(8192)('message 1')).toBe(text);
    const packed = deflateRawSync(Buffer.from(text)).byteLength;
    // Real JSON payloads deflate to a quarter to a half; 8 KiB of one letter to about 30 bytes.
    expect(packed).toBeGreaterThan(8192 / 5);
    expect(packed).toBeLessThan(8192 / 1.5);
  });

  it('by default adds 100 x to the beginning, as runs before the option did', () => {
    expect(bodyMaker()('message 7')).toBe(`message 7 ${'x'.repeat(100)}`);
  });
});
