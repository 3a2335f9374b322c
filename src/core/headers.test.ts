import { describe, expect, it } from 'vitest';
import {
  HeaderMapBuilder,
  HOP_BY_HOP_HEADERS,
  addHeader,
  canonicalHeaderName,
  deleteHeader,
  headerGet,
  headerValues,
  isValidHeaderName,
  headerValueProblem,
  isValidHeaderValue,
  quoteValue,
  setHeader,
} from './headers.js';
import type { HeaderMap } from './types.js';

describe('canonicalHeaderName', () => {
  it.each<[string, string]>([
    ['content-type', 'Content-Type'],
    ['CONTENT-TYPE', 'Content-Type'],
    ['x-API-key', 'X-Api-Key'],
    ['svc-nonretryable-error', 'Svc-Nonretryable-Error'],
    ['etag', 'Etag'],
    ['a--b', 'A--B'],
    ['-x', '-X'],
    ['x_y-z', 'X_y-Z'], // only "-" starts a new word, as in Go
    ['1abc-2def', '1abc-2def'],
    ['bad name', 'bad name'], // not a token: unchanged, as in Go
    ['', ''],
  ])('%j → %j', (name, canonical) => {
    expect(canonicalHeaderName(name)).toBe(canonical);
  });

  it('answers the same for names seen before, past the cache bounds on count and length', () => {
    // Names are cached; the cache starts over after 1,024 and skips names over 64 characters.
    const long = `x-${'long-'.repeat(20)}name`;
    const expectLong = `X-${'Long-'.repeat(20)}Name`;
    for (let round = 0; round < 2; round++) {
      for (let i = 0; i < 3_000; i++) {
        expect(canonicalHeaderName(`x-custom-${i}`)).toBe(`X-Custom-${i}`);
      }
      expect(canonicalHeaderName(long)).toBe(expectLong);
      expect(canonicalHeaderName('content-TYPE')).toBe('Content-Type');
      expect(canonicalHeaderName('bad name')).toBe('bad name');
    }
  });
});

describe('headerGet / headerValues', () => {
  const map: HeaderMap = {
    'Content-Type': ['text/plain'],
    'X-Multi': ['a', 'b'],
    'x-lower': ['odd spelling'],
    Empty: [],
  };
  it.each<[string, string | undefined, string[]]>([
    ['Content-Type', 'text/plain', ['text/plain']],
    ['content-type', 'text/plain', ['text/plain']],
    ['X-MULTI', 'a', ['a', 'b']],
    ['X-Lower', 'odd spelling', ['odd spelling']],
    ['Empty', undefined, []],
    ['Missing', undefined, []],
    ['constructor', undefined, []],
    ['__proto__', undefined, []],
  ])('%j → first %j, all %j', (name, first, all) => {
    expect(headerGet(map, name)).toBe(first);
    expect(headerValues(map, name)).toEqual(all);
  });
});

describe('addHeader / setHeader / deleteHeader', () => {
  it.each<[string, HeaderMap, [string, string][], HeaderMap]>([
    ['canonicalises', {}, [['x-token', 'a']], { 'X-Token': ['a'] }],
    [
      'appends values',
      {},
      [
        ['x-a', '1'],
        ['X-A', '2'],
      ],
      { 'X-A': ['1', '2'] },
    ],
    ['merges another spelling', { 'x-a': ['1'] }, [['X-A', '2']], { 'X-A': ['1', '2'] }],
    ['keeps others', { B: ['b'] }, [['a', '1']], { B: ['b'], A: ['1'] }],
  ])('%s', (_, initial, adds, expected) => {
    const map = structuredClone(initial);
    for (const [name, value] of adds) addHeader(map, name, value);
    expect(map).toEqual(expected);
  });

  it('stores __proto__ as a plain entry', () => {
    const map: HeaderMap = {};
    addHeader(map, '__proto__', 'x');
    expect(Object.getPrototypeOf(map)).toBe(Object.prototype);
    expect(Object.keys(map)).toEqual(['__proto__']);
    expect(headerGet(map, '__proto__')).toBe('x');
    expect(JSON.parse(JSON.stringify(map))).toEqual(JSON.parse('{"__proto__":["x"]}'));
  });

  it('setHeader replaces every spelling; deleteHeader removes every spelling', () => {
    const map: HeaderMap = { 'x-a': ['1'], 'X-A': ['2'], B: ['b'] };
    setHeader(map, 'X-a', ['3']);
    expect(map).toEqual({ 'X-A': ['3'], B: ['b'] });
    deleteHeader(map, 'x-A');
    expect(map).toEqual({ B: ['b'] });
  });
});

describe('HeaderMapBuilder', () => {
  it('builds what addHeader and setHeader build, keys in the same order', () => {
    const steps: [op: 'add' | 'set', name: string, values: string[]][] = [
      ['add', 'x-a', ['1']],
      ['add', 'Content-Type', ['text/plain']],
      ['add', 'X-A', ['2']],
      ['set', 'content-type', ['application/json']],
      ['add', 'x b', ['odd name']],
      ['set', 'X-Gone', []],
      ['add', '__proto__', ['p']],
      ['add', 'x-GONE', ['back']],
    ];
    const map: HeaderMap = {};
    const builder = new HeaderMapBuilder();
    for (const [op, name, values] of steps) {
      if (op === 'set') {
        setHeader(map, name, values);
        builder.set(name, values);
      } else {
        for (const value of values) {
          addHeader(map, name, value);
          builder.add(name, value);
        }
      }
    }
    const built = builder.build();
    expect(Object.entries(built)).toEqual(Object.entries(map));
    expect(Object.getPrototypeOf(built)).toBe(Object.prototype);
    expect(built['X-A']).toEqual(['1', '2']);
  });
});

describe('header syntax', () => {
  it.each<[string, boolean]>([
    ['X-Token', true],
    ["!#$%&'*+-.^_`|~09azAZ", true],
    ['', false],
    ['a b', false],
    ['a:b', false],
    [':path', false],
    ['ä', false],
  ])('isValidHeaderName(%j) = %s', (name, valid) => {
    expect(isValidHeaderName(name)).toBe(valid);
  });

  it.each<[string, boolean]>([
    ['plain value', true],
    ['tab\tinside', true],
    ['', true],
    ['ünïcode', true],
    ['a\r\nInjected: 1', false],
    ['nul\u0000', false],
    ['del\u007f', false],
  ])('isValidHeaderValue(%j) = %s', (value, valid) => {
    expect(isValidHeaderValue(value)).toBe(valid);
  });

  // What undici sends: tab, U+0020–U+007E and U+0080–U+00FF; anything else fails every attempt.
  it.each<[string, RegExp | undefined]>([
    ['plain value', undefined],
    ['tab\tinside', undefined],
    ['café ü ÿ', undefined],
    ['a\r\nInjected: 1', /control characters/],
    ['del\u007f', /control characters/],
    ['€', /above U\+00FF/],
    ['日本', /above U\+00FF/],
    ['text/plain; name=Ā', /above U\+00FF/],
  ])('headerValueProblem(%j)', (value, problem) => {
    const found = headerValueProblem(value);
    if (problem === undefined) expect(found).toBeUndefined();
    else expect(found).toMatch(problem);
  });
});

describe('HOP_BY_HOP_HEADERS', () => {
  it.each([
    'connection',
    'keep-alive',
    'proxy-authenticate',
    'proxy-authorization',
    'te',
    'trailer',
    'transfer-encoding',
    'upgrade',
    'host',
    'content-length',
    'expect',
  ])('contains %s', (name) => {
    expect(HOP_BY_HOP_HEADERS.has(name)).toBe(true);
  });

  it.each(['content-type', 'authorization', 'x-token'])('does not contain %s', (name) => {
    expect(HOP_BY_HOP_HEADERS.has(name)).toBe(false);
  });
});

describe('quoteValue', () => {
  it.each<[string, number | undefined, string]>([
    ['abc', undefined, '"abc"'],
    ['a"b', undefined, '"a\\"b"'],
    ['line\nbreak', undefined, '"line\\nbreak"'],
    ['abcdef', 3, '"abc…"'],
  ])('%j (max %s) → %s', (value, max, quoted) => {
    expect(quoteValue(value, max)).toBe(quoted);
  });
});
