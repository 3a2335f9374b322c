import { describe, expect, it } from 'vitest';
import { DEFAULT_PLANS } from './plans.js';
import type { UrlGroup } from './types.js';
import {
  checkName,
  endpointsAfterRemoving,
  parseDefaultHeaders,
  parseEndpointsToAdd,
  parseEndpointsToRemove,
  withEndpointsAdded,
} from './url-groups.js';

const plan = { ...DEFAULT_PLANS.free, max_endpoints_per_topic: 3 };
const group = (endpoints: UrlGroup['endpoints']): UrlGroup => ({
  accountId: 'acct',
  name: 'g',
  createdAt: 1,
  updatedAt: 1,
  endpoints,
});

describe('checkName', () => {
  it.each(['orders', 'a-b_c.d', 'A1', 'x'.repeat(256)])('accepts %s', (name) => {
    expect(checkName(name, 'URL group name')).toBe(name);
  });
  it.each(['', 'a b', 'a/b', 'ä', 'x'.repeat(257), 'a:b'])('refuses %o naming it', (name) => {
    expect(() => checkName(name, 'URL group name')).toThrow(/invalid URL group name/);
  });
});

describe('parseEndpointsToAdd', () => {
  it('reads urls and optional names', () => {
    expect(
      parseEndpointsToAdd({
        endpoints: [{ url: 'https://a.example/x?y=1', name: 'a' }, { url: 'http://b.example' }],
      }),
    ).toEqual([{ url: 'https://a.example/x?y=1', name: 'a' }, { url: 'http://b.example' }]);
  });
  it.each([
    [null, /expected \{"endpoints"/],
    [{ endpoints: {} }, /expected \{"endpoints"/],
    [{ endpoints: [] }, /"endpoints" is empty/],
    [{ endpoints: ['https://a.example'] }, /endpoints\[0\]: expected an object/],
    [{ endpoints: [{ name: 'a' }] }, /endpoints\[0\]: "url" is required/],
    [{ endpoints: [{ url: 'ftp://a.example' }] }, /endpoints\[0\]\.url "ftp:\/\/a.example"/],
    [{ endpoints: [{ url: 'not a url' }] }, /endpoints\[0\]\.url/],
    [{ endpoints: [{ url: 'https://a.example', name: 'a b' }] }, /endpoints\[0\]\.name/],
    [{ endpoints: [{ url: 'https://a.example', name: '..' }] }, /endpoints\[0\]\.name "\.\.": /],
    [{ endpoints: [{ url: 7 }] }, /endpoints\[0\]\.url: expected a string/],
  ])('%o is a 400: %s', (body, pattern) => {
    expect(() => parseEndpointsToAdd(body)).toThrow(pattern);
  });
});

describe('withEndpointsAdded', () => {
  const add = (current: UrlGroup | undefined, endpoints: UrlGroup['endpoints']) =>
    withEndpointsAdded({ current, accountId: 'acct', name: 'g', endpoints, plan, now: 5 });

  it('creates a group, keeping the order of endpoints', () => {
    expect(add(undefined, [{ url: 'https://a' }, { url: 'https://b', name: 'b' }])).toEqual({
      accountId: 'acct',
      name: 'g',
      createdAt: 5,
      updatedAt: 5,
      endpoints: [{ url: 'https://a' }, { url: 'https://b', name: 'b' }],
    });
  });

  it('the same URL twice is one endpoint; a name given later names it', () => {
    const current = group([{ url: 'https://a' }]);
    const next = add(current, [{ url: 'https://a' }, { url: 'https://a', name: 'first' }]);
    expect(next.endpoints).toEqual([{ url: 'https://a', name: 'first' }]);
    expect(next.createdAt).toBe(1);
    expect(next.updatedAt).toBe(5);
  });

  it('a name already used by another URL is a 400 naming both', () => {
    const current = group([{ url: 'https://a', name: 'n' }]);
    expect(() => add(current, [{ url: 'https://b', name: 'n' }])).toThrow(
      /endpoint name "n" is already used by "https:\/\/a"/,
    );
  });

  it('more endpoints than max_endpoints_per_topic is a 412 naming the limit', () => {
    const current = group([{ url: 'https://a' }, { url: 'https://b' }]);
    expect(add(current, [{ url: 'https://c' }]).endpoints).toHaveLength(3);
    expect(() => add(current, [{ url: 'https://c' }, { url: 'https://d' }])).toThrow(
      expect.objectContaining({
        status: 412,
        message: expect.stringMatching(/max_endpoints_per_topic \(3\)/),
      }),
    );
  });
});

describe('endpointsAfterRemoving', () => {
  const current = group([
    { url: 'https://a', name: 'a' },
    { url: 'https://b' },
    { url: 'https://c', name: 'c' },
  ]);

  it('removes by url, by name, and by both', () => {
    const refs = parseEndpointsToRemove({
      endpoints: [{ url: 'https://b' }, { name: 'a' }],
    });
    expect(endpointsAfterRemoving(current, refs)).toEqual([{ url: 'https://c', name: 'c' }]);
    expect(endpointsAfterRemoving(current, [{ url: 'https://c', name: 'c' }])).toHaveLength(2);
  });

  it('a ref matching nothing is a 404 naming it', () => {
    expect(() => endpointsAfterRemoving(current, [{ url: 'https://c', name: 'a' }])).toThrow(
      expect.objectContaining({
        status: 404,
        message: expect.stringMatching(/url "https:\/\/c" and name "a"/),
      }),
    );
  });

  it('an entry with neither url nor name is a 400', () => {
    expect(() => parseEndpointsToRemove({ endpoints: [{}] })).toThrow(/give "url", "name" or both/);
  });
});

describe('parseDefaultHeaders', () => {
  it('takes strings and arrays, stores canonical names', () => {
    expect(
      parseDefaultHeaders({ headers: { 'upstash-header-forward': ['true'], 'svc-retries': '3' } }),
    ).toEqual({ 'Upstash-Header-Forward': ['true'], 'Svc-Retries': ['3'] });
  });
  it.each([
    [{}, /expected \{"headers"/],
    [{ headers: { 'bad name': 'x' } }, /invalid header name "bad name"/],
    [{ headers: { 'X-A': 1 } }, /headers\.X-A: expected a string or a non-empty array/],
    [{ headers: { 'X-A': [] } }, /headers\.X-A/],
    [{ headers: { 'X-A': 'a\r\nb' } }, /control characters/],
  ])('%o is a 400', (body, pattern) => {
    expect(() => parseDefaultHeaders(body)).toThrow(pattern);
  });
});
