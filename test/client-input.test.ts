/**
 * "Never a 5xx for client input": random, mostly malformed publishes and queries must each get a
 * JSON answer below 500, and the server must keep serving. The generator is seeded, so a failure
 * reproduces.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFerry, type TestFerry } from './helpers/ferry.js';
import { planArgs } from './helpers/limits.js';

let t: TestFerry;
beforeAll(async () => {
  // Hundreds of requests a second: the request-rate limit is not what this test is about.
  const args = planArgs({ free: { max_requests_per_second: 0 } });
  t = await startFerry({ engine: false, plan: 'free', args });
});
afterAll(async () => {
  await t.close();
});

/** A small deterministic generator (mulberry32). */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let x = Math.imul(a ^ (a >>> 15), 1 | a);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

const SETTINGS = [
  'Method',
  'Delay',
  'Not-Before',
  'Retries',
  'Retry-Delay',
  'Timeout',
  'Label',
  'Deduplication-Id',
  'Content-Based-Deduplication',
  'Flow-Control-Key',
  'Flow-Control-Value',
  'Header-Forward',
  'Forward-X-Test',
  'Forward-',
  'Callback',
  'Callback-Retries',
  'Callback-Forward-X',
  'Failure-Callback',
  'Failure-Callback-Delay',
  'Redact-Fields',
  'Unknown-Thing',
];

const VALUES = [
  '',
  ' ',
  '0',
  '-1',
  '1',
  '3',
  '99999999999999999999',
  '1.5',
  'abc',
  'true',
  'false',
  'TRUE',
  '10s',
  '1d2h3m4s',
  '5x',
  '1e3',
  'NaN',
  'Infinity',
  'pow(2, retried) * 1000',
  'retried +',
  '((((((((((1))))))))))',
  'process.exit(1)',
  'constructor.constructor',
  '__proto__',
  'parallelism=2, rate=10, period=1m',
  'rate=0',
  'parallelism=-1',
  'period=1y',
  'a,b,,c',
  'x'.repeat(2_000),
  '\u00e9\u00e8',
  'https://example.com',
  'GET',
  'BREW',
  'body, header[Authorization]',
  'header[',
];

const DESTINATIONS = [
  'https://example.com/x',
  'http://',
  'https:/example.com',
  'ftp://x',
  'group.name',
  '%%%',
  'https%3A%2F%2Fexample.com%2Fy',
  'https://[::1]:99999/',
  'https://example.com/a?b=1&svc-retries=2',
  'a'.repeat(9_000),
  '',
  '..',
  'https://exa mple.com',
];

describe('client input', () => {
  it('answers every random publish with JSON and a status below 500', async () => {
    const next = random(20261121);
    const pick = <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)] as T;
    for (let i = 0; i < 300; i++) {
      const headers: Record<string, string> = { authorization: `Bearer ${t.token}` };
      const query = new URLSearchParams();
      const count = Math.floor(next() * 4);
      for (let j = 0; j < count; j++) {
        const setting = pick(SETTINGS);
        const value = pick(VALUES);
        if (next() < 0.7) headers[`Svc-${setting}`] = value.replace(/[^\x20-\x7e]/g, '?');
        else query.append(`svc-${setting.toLowerCase()}`, value);
      }
      const destination = pick(DESTINATIONS);
      const q = query.toString();
      const res = await fetch(`${t.url}/v2/publish/${destination}${q ? `?${q}` : ''}`, {
        method: 'POST',
        headers,
        body: next() < 0.5 ? 'hello' : Buffer.from([0, 255, 1, 254]),
      });
      const text = await res.text();
      const context = `${res.status} for ${destination} ${JSON.stringify(headers)} ?${q}: ${text}`;
      expect(res.status, context).toBeLessThan(500);
      expect(() => JSON.parse(text) as unknown, context).not.toThrow();
    }
    // Still serving.
    expect((await t.api('/v2/events?count=1')).status).toBe(200);
  });

  it('answers random filter queries with a status below 500', async () => {
    const next = random(7);
    const names = [
      'messageId',
      'state',
      'url',
      'label',
      'fromDate',
      'toDate',
      'count',
      'cursor',
      'responseStatus',
      'x',
    ];
    const paths = ['/v2/events', '/v2/logs', '/v2/dlq', '/v2/messages'];
    for (let i = 0; i < 150; i++) {
      const query = new URLSearchParams();
      for (let j = 0; j < 3; j++) {
        query.append(
          names[Math.floor(next() * names.length)] as string,
          VALUES[Math.floor(next() * VALUES.length)] as string,
        );
      }
      const path = paths[Math.floor(next() * paths.length)] as string;
      const method = path === '/v2/messages' ? 'DELETE' : 'GET';
      const res = await t.api(`${path}?${query.toString()}`, { method });
      expect(res.status, `${method} ${path}?${query.toString()}`).toBeLessThan(500);
    }
  });

  it('answers random JSON bodies on batch and URL-group endpoints with JSON and a status below 500', async () => {
    const next = random(42);
    const pick = <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)] as T;
    const scalars: unknown[] = [null, true, 0, -1, 1.5, '', 'x', 'https://example.com/a', [], {}];
    const value = (depth: number): unknown => {
      const r = next();
      if (depth > 2 || r < 0.5) return r < 0.25 ? pick(VALUES) : pick(scalars);
      if (r < 0.75) return Array.from({ length: Math.floor(next() * 3) }, () => value(depth + 1));
      const keys = [
        'destination',
        'body',
        'headers',
        'queue',
        'endpoints',
        'url',
        'name',
        'Svc-Retries',
        '__proto__',
      ];
      return Object.fromEntries(
        Array.from({ length: Math.floor(next() * 4) }, () => [pick(keys), value(depth + 1)]),
      );
    };
    const requests: [string, string][] = [
      ['POST', '/v2/batch'],
      ['POST', '/v2/topics/g/endpoints'],
      ['DELETE', '/v2/topics/g/endpoints'],
      ['PATCH', '/v2/topics/g'],
      ['POST', '/v2/topics/bad name/endpoints'],
    ];
    for (let i = 0; i < 200; i++) {
      const [method, path] = pick(requests);
      const raw = next() < 0.1 ? '{"truncated": [' : JSON.stringify(value(0));
      const res = await t.api(path, { method, body: raw });
      const text = await res.text();
      const context = `${res.status} for ${method} ${path} ${raw.slice(0, 300)}: ${text}`;
      expect(res.status, context).toBeLessThan(500);
      expect(() => JSON.parse(text) as unknown, context).not.toThrow();
    }
    expect((await t.api('/v2/topics')).status).toBe(200);
  });
});
