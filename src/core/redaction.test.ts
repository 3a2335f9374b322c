import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { redactGroupDefaults, redactHeaders, redactedText } from './redaction.js';

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

  describe('redactGroupDefaults', () => {
    const r = (v: string) => `REDACTED:${sha(v)}`;
    const defaults = {
      'Svc-Forward-Authorization': ['Bearer s'],
      'X-Key': ['k'],
      'Svc-Callback-Forward-X-Key': ['cb'],
      'Svc-Failure-Callback-Forward-Authorization': ['f'],
      'Svc-Callback': ['https://cb.example.com'],
      'Svc-Retries': ['2'],
    };
    it.each<[string, string | undefined, Record<string, string[]>]>([
      ['no Redact-Fields: shown as stored', undefined, defaults],
      [
        'headers: every header value, settings shown',
        'headers',
        {
          'Svc-Forward-Authorization': [r('Bearer s')],
          'X-Key': [r('k')],
          'Svc-Callback-Forward-X-Key': [r('cb')],
          'Svc-Failure-Callback-Forward-Authorization': [r('f')],
          'Svc-Callback': ['https://cb.example.com'],
          'Svc-Retries': ['2'],
        },
      ],
      [
        'header[Authorization]: that header wherever it is sent',
        'header[authorization]',
        {
          ...defaults,
          'Svc-Forward-Authorization': [r('Bearer s')],
          'Svc-Failure-Callback-Forward-Authorization': [r('f')],
        },
      ],
      ['body only: no header is hidden', 'body', defaults],
      [
        'unparsable: fails closed',
        'bodies',
        {
          'Svc-Forward-Authorization': [r('Bearer s')],
          'X-Key': [r('k')],
          'Svc-Callback-Forward-X-Key': [r('cb')],
          'Svc-Failure-Callback-Forward-Authorization': [r('f')],
          'Svc-Callback': ['https://cb.example.com'],
          'Svc-Retries': ['2'],
        },
      ],
    ])('%s', (_name, fields, expected) => {
      const input =
        fields === undefined ? defaults : { ...defaults, 'svc-redact-fields': [fields] };
      const out = redactGroupDefaults(input, 'Svc');
      const { 'svc-redact-fields': shown, ...rest } = out;
      expect(rest).toEqual(expected);
      if (fields !== undefined) expect(shown).toEqual([fields]);
    });
  });
});
