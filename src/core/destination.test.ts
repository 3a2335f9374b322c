import { describe, expect, it } from 'vitest';
import { checkHttpUrl, MAX_URL_LENGTH, parseDestination, type Destination } from './destination.js';
import { FerryError } from './errors.js';

describe('parseDestination', () => {
  it.each<[string, string, string, Destination, [string, string][]]>([
    ['plain URL', 'https://example.com/', '', { kind: 'url', url: 'https://example.com/' }, []],
    [
      'no trailing slash kept',
      'https://example.com',
      '',
      { kind: 'url', url: 'https://example.com' },
      [],
    ],
    [
      'path and port kept as written',
      'http://example.com:8080/a/b%2Fc',
      '',
      { kind: 'url', url: 'http://example.com:8080/a/b%2Fc' },
      [],
    ],
    [
      'scheme case-insensitive',
      'HTTPS://Example.com/x',
      '',
      { kind: 'url', url: 'HTTPS://Example.com/x' },
      [],
    ],
    [
      'collapsed slash repaired',
      'https:/example.com/hook',
      '',
      { kind: 'url', url: 'https://example.com/hook' },
      [],
    ],
    [
      'collapsed slash, http',
      'http:/localhost:3000',
      '',
      { kind: 'url', url: 'http://localhost:3000' },
      [],
    ],
    [
      'percent-encoded destination decoded',
      'https%3A%2F%2Fexample.com%2Fhook%3Fa%3D1',
      '',
      { kind: 'url', url: 'https://example.com/hook?a=1' },
      [],
    ],
    [
      'percent-encoded, lower-case escapes',
      'http%3a%2f%2fexample.com%2fx',
      '',
      { kind: 'url', url: 'http://example.com/x' },
      [],
    ],
    [
      'destination query re-attached in order and encoding',
      'https://example.com/search',
      'q=a%20b&page=2&tag=x+y',
      { kind: 'url', url: 'https://example.com/search?q=a%20b&page=2&tag=x+y' },
      [],
    ],
    [
      "Ferry's parameters taken out",
      'https://example.com/hook',
      'a=1&queue_token=T&svc-retries=3&b=2&svc-forward-x-token=abc&qstash_token=Q',
      { kind: 'url', url: 'https://example.com/hook?a=1&b=2' },
      [
        ['queue_token', 'T'],
        ['svc-retries', '3'],
        ['svc-forward-x-token', 'abc'],
        ['qstash_token', 'Q'],
      ],
    ],
    [
      'only Ferry parameters: no "?" left',
      'https://example.com/hook',
      'svc-delay=10s',
      { kind: 'url', url: 'https://example.com/hook' },
      [['svc-delay', '10s']],
    ],
    [
      'prefix matched case-insensitively, values decoded',
      'https://example.com/',
      'SVC-Label=a%2Cb&x=1',
      { kind: 'url', url: 'https://example.com/?x=1' },
      [['SVC-Label', 'a,b']],
    ],
    [
      'other dialect prefix: svc-* belongs to the destination',
      'https://example.com/',
      'svc-retries=3&upstash-retries=2',
      { kind: 'url', url: 'https://example.com/?svc-retries=3' },
      [['upstash-retries', '2']],
    ],
    [
      'encoded parameter name recognised',
      'https://example.com/',
      'svc%2Dretries=1',
      { kind: 'url', url: 'https://example.com/' },
      [['svc-retries', '1']],
    ],
    [
      'query appended to an encoded destination that has its own',
      'https%3A%2F%2Fexample.com%2F%3Fa%3D1',
      'b=2',
      { kind: 'url', url: 'https://example.com/?a=1&b=2' },
      [],
    ],
    [
      'query inserted before a fragment',
      'https%3A%2F%2Fexample.com%2Fp%23frag',
      'b=2',
      { kind: 'url', url: 'https://example.com/p?b=2#frag' },
      [],
    ],
    [
      'parameters without values and empty parts kept',
      'https://example.com/',
      'flag&&x=',
      { kind: 'url', url: 'https://example.com/?flag&&x=' },
      [],
    ],
    [
      'decoded space is serialised the way it will be requested',
      'https%3A%2F%2Fexample.com%2Fa%20b',
      '',
      { kind: 'url', url: 'https://example.com/a%20b' },
      [],
    ],
    [
      'IDN host serialised as punycode',
      'https%3A%2F%2Fb%C3%BCcher.example%2F',
      '',
      { kind: 'url', url: 'https://xn--bcher-kva.example/' },
      [],
    ],
    ['URL group', 'my-group_1.v2', '', { kind: 'group', name: 'my-group_1.v2' }, []],
    [
      'URL group keeps Ferry params, drops the rest',
      'orders',
      'source=github&svc-retries=1&queue_token=T',
      { kind: 'group', name: 'orders' },
      [
        ['svc-retries', '1'],
        ['queue_token', 'T'],
      ],
    ],
  ])('%s', (_, rawPath, rawQuery, destination, query) => {
    const result = parseDestination({
      rawPath,
      rawQuery,
      prefix: rawQuery.includes('upstash-') ? 'Upstash' : 'Svc',
    });
    expect(result.destination).toEqual(destination);
    expect([...result.query]).toEqual(query);
  });

  it.each<[string, string, string]>([
    ['', '', 'missing destination'],
    ['ftp://example.com/', '', 'invalid destination "ftp://example.com/"'],
    ['my group', '', 'invalid destination "my group"'],
    ['group/sub', '', 'invalid destination "group/sub"'],
    ['https:', '', 'expected http:// or https://'],
    ['https:example.com', '', 'expected http:// or https://'],
    ['https://', '', 'invalid destination URL "https://"'],
    ['https://exa mple.com/', '', 'invalid destination URL'],
    ['http://[::1/', '', 'invalid destination URL'],
    ['https%3A%2F%2Fexample.com%ZZ', '', 'bad percent-encoding'],
    // WHATWG parsing would deliver these to another host than the one shown.
    ['http:///path', '', 'invalid destination URL "http:///path": missing host'],
    ['https:////x', '', 'missing host'],
    ['http:///', '', 'invalid destination URL'],
    ['http://127.0.0.1:18642\\bs2', '', 'a backslash in the host part'],
    ['https://example.com\\@evil.example/', '', 'a backslash in the host part'],
    ['https%3A%2F%2F%2Fpath', '', 'missing host'],
    [`https://example.com/${'a'.repeat(MAX_URL_LENGTH)}`, '', `longer than ${MAX_URL_LENGTH}`],
    ['https://example.com/', `x=${'a'.repeat(MAX_URL_LENGTH)}`, `longer than ${MAX_URL_LENGTH}`],
  ])('rejects %j ? %j', (rawPath, rawQuery, problem) => {
    let error: unknown;
    try {
      parseDestination({ rawPath, rawQuery, prefix: 'Svc' });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(FerryError);
    expect((error as FerryError).status).toBe(400);
    expect((error as FerryError).message).toContain(problem);
  });

  it.each([
    'HTTPS://Example.COM:443/a',
    'http://user:pass@example.com/x',
    'http://bücher.example/',
    'http://127.1:8080/x',
    'http://[0:0::1]/',
    'https://example.com?x=1',
    'https://example.com/a\\b',
  ])('accepts %j: the host as written is the host delivered to', (rawPath) => {
    const { destination } = parseDestination({ rawPath, rawQuery: '', prefix: 'Svc' });
    expect(destination.kind).toBe('url');
  });

  it(`accepts a URL of exactly ${MAX_URL_LENGTH} characters`, () => {
    const base = 'https://example.com/';
    const url = base + 'a'.repeat(MAX_URL_LENGTH - base.length);
    expect(parseDestination({ rawPath: url, rawQuery: '', prefix: 'Svc' }).destination).toEqual({
      kind: 'url',
      url,
    });
  });
});

describe('checkHttpUrl', () => {
  it.each([
    ['http:///cb', 'missing host'],
    ['https:////cb', 'missing host'],
    ['http://h.example\\cb', 'a backslash in the host part'],
    ['https://h.example/a\nb', 'control characters'],
    ['ftp://h.example/', 'expected an http:// or https:// URL'],
  ])('refuses %j naming the field', (url, problem) => {
    expect(() => checkHttpUrl(url, 'Svc-Callback')).toThrow(`invalid Svc-Callback`);
    expect(() => checkHttpUrl(url, 'Svc-Callback')).toThrow(problem);
  });

  it('keeps a good URL as written', () => {
    expect(checkHttpUrl(' https://h.example/a%20b?x=1 ', 'f')).toBe('https://h.example/a%20b?x=1');
  });
});
