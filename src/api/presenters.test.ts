import { describe, expect, it } from 'vitest';
import { cutFields, trimCutUtf8 } from './presenters.js';

describe('trimCutUtf8', () => {
  const text = 'aé€😀'; // 1, 2, 3 and 4 bytes
  const bytes = Buffer.from(text);
  it.each([
    [1, 'a'],
    [2, 'a'], // é cut after its first byte
    [3, 'aé'],
    [4, 'aé'],
    [5, 'aé'],
    [6, 'aé€'],
    [7, 'aé€'],
    [8, 'aé€'],
    [9, 'aé€'],
    [10, text],
  ])('a cut to %i bytes keeps the whole characters: %s', (cut, expected) => {
    expect(Buffer.from(trimCutUtf8(bytes.subarray(0, cut))).toString()).toBe(expected);
  });
  it('leaves bytes that are not text alone past three bytes back', () => {
    const binary = new Uint8Array([0xff, 0x80, 0x80, 0x80]);
    expect([...trimCutUtf8(binary)]).toEqual([...binary]);
  });
});

describe('cutFields', () => {
  it('names the key and the whole size only when the body was cut', () => {
    expect(cutFields('body', 10)).toEqual({ bodyTruncated: true, bodySize: 10 });
    expect(cutFields('responseBody', undefined)).toEqual({});
  });
});
