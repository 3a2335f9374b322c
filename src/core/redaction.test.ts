import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { redactHeaders, redactedText } from './redaction.js';

const sha = (v: string) => createHash('sha256').update(v).digest('hex');

describe('redaction', () => {
  it('redactedText is REDACTED:<sha256 hex> of the value, for text and bytes alike', () => {
    expect(redactedText('secret')).toBe(`REDACTED:${sha('secret')}`);
    expect(redactedText(Buffer.from('secret'))).toBe(`REDACTED:${sha('secret')}`);
  });

  it('redactHeaders hides every value, or only the named headers (any case), keeping names', () => {
    const headers = { Authorization: ['Bearer s'], 'X-Many': ['1', '2'], 'Content-Type': ['a/b'] };
    expect(redactHeaders(headers, { headers: true })).toEqual({
      Authorization: [`REDACTED:${sha('Bearer s')}`],
      'X-Many': [`REDACTED:${sha('1')}`, `REDACTED:${sha('2')}`],
      'Content-Type': [`REDACTED:${sha('a/b')}`],
    });
    expect(redactHeaders(headers, { headers: ['authorization'] })).toEqual({
      ...headers,
      Authorization: [`REDACTED:${sha('Bearer s')}`],
    });
    expect(redactHeaders(headers, { body: true })).toBe(headers);
    expect(headers.Authorization).toEqual(['Bearer s']); // the input is untouched
  });
});
