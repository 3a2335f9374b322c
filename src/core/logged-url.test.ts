import { describe, expect, it } from 'vitest';
import { urlForLog } from './logged-url.js';

describe('urlForLog', () => {
  it.each([
    ['/v2/events', '/v2/events'],
    ['/v2/events?count=5', '/v2/events?count=5'],
    ['/v2/events?queue_token=abc&count=5', '/v2/events?queue_token=[redacted]&count=5'],
    ['/v2/events?count=5&qstash_token=abc', '/v2/events?count=5&qstash_token=[redacted]'],
    ['/v2/events?QUEUE_TOKEN=abc', '/v2/events?QUEUE_TOKEN=[redacted]'],
    ['/v2/events?queue%5Ftoken=abc', '/v2/events?queue%5Ftoken=[redacted]'],
    ['/v2/events?queue_token', '/v2/events?queue_token=[redacted]'],
    [
      '/v2/publish/https://example.com/h?access_token=t1&svc-forward-authorization=Bearer%20x&a=%2F',
      '/v2/publish/https://example.com/h?access_token=[redacted]&svc-forward-authorization=[redacted]&a=%2F',
    ],
    [
      '/v2/x?client_secret=s&password=p&api_key=k',
      '/v2/x?client_secret=[redacted]&password=[redacted]&api_key=[redacted]',
    ],
    ['/v2/x?%zz=1&svc-retries=3', '/v2/x?%zz=1&svc-retries=3'],
  ])('%s', (url, logged) => {
    expect(urlForLog(url)).toBe(logged);
  });
});
