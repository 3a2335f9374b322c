/** What the console's forms send: settings a header cannot carry go as query parameters. */
import { describe, expect, it } from 'vitest';
import {
  addHeader,
  addSetting,
  beyondLatin1,
  checkHeaderName,
  outgoing,
} from '../console/src/outgoing.js';

describe('outgoing', () => {
  it('finds the first character above U+00FF', () => {
    expect(beyondLatin1('café ÿ')).toBeUndefined();
    expect(beyondLatin1('ok 注文')).toBe('注');
    expect(beyondLatin1('a😀')).toBe('😀');
  });

  it('sends a setting as a header, or as its query parameter when no header can carry it', () => {
    const out = outgoing();
    addSetting(out, 'Svc-Label', 'café');
    addSetting(out, 'Svc-Flow-Control-Key', '顧客-7');
    expect(out).toEqual({
      headers: { 'Svc-Label': 'café' },
      query: { 'svc-flow-control-key': '顧客-7' },
    });
  });

  it('refuses a plain header no header can carry, naming the field and the character', () => {
    const out = outgoing();
    expect(() => addHeader(out, 'Svc-Forward-X-Note', 'im 日本', 'Header 1 value')).toThrow(
      'Header 1 value holds U+65E5 "日": a header value can only carry characters up to U+00FF',
    );
    addHeader(out, 'content-type', 'text/plain; charset=latin1', 'Content type');
    expect(out.headers).toEqual({ 'content-type': 'text/plain; charset=latin1' });
    expect(() => checkHeaderName('X Note', 'Header 2 name')).toThrow(
      'Header 2 name "X Note" is not a header name',
    );
    expect(() => checkHeaderName('X-Note', 'Header 2 name')).not.toThrow();
  });
});
