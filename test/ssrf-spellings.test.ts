/**
 * Production mode at request time: every spelling of a loopback, private, link-local or
 * unspecified address (decimal, octal, hex, short forms, mixed, trailing dots, padded, IDNA dots
 * and digits, percent-encoded, IPv4-mapped / -compatible / -translated IPv6, NAT64, 6to4) is
 * refused with a 400 on every kind of route that takes a URL Ferry would deliver to, and
 * nothing of the request is stored. The WHATWG URL parser reads these spellings as the address
 * they name (which is also what the HTTP client connects to), and the check is made on that.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/core/clock.js';
import { startFerry, type TestFerry } from './helpers/ferry.js';
import { PUBLIC, failedDlqEntry } from './helpers/ssrf.js';

/** URL hosts, each naming an address production mode refuses (the comment: which one). */
export const REFUSED_HOSTS: [spelling: string, host: string][] = [
  ['decimal', '2130706433'], // 127.0.0.1
  ['octal', '0177.0.0.1'],
  ['octal, one number', '017700000001'],
  ['hex', '0x7f.0.0.1'],
  ['hex, one number', '0x7f000001'],
  ['hex, every part', '0x7F.0x0.0x0.0x1'],
  ['short form a.b', '127.1'],
  ['short form a.b.c', '127.0.1'],
  ['zero', '0'], // 0.0.0.0
  ['mixed hex and octal', '0x7f.01'],
  ['mixed octal short form', '0177.1'],
  ['zero-padded', '127.000.000.001'],
  ['trailing dot', '127.0.0.1.'],
  ['decimal with trailing dot', '2130706433.'],
  ['short form with trailing dot', '127.1.'],
  ['ideographic full stops', '127\u30020\u30020\u30021'],
  ['circled digits (IDNA)', '\u2460\u2461\u2466.0.0.1'],
  ['percent-encoded', '%31%32%37.0.0.1'],
  ['private, decimal', '167772161'], // 10.0.0.1
  ['private, octal', '0300.0250.0.1'], // 192.168.0.1
  ['link-local metadata, hex', '0xa9fea9fe'], // 169.254.169.254
  ['localhost with trailing dot', 'localhost.'],
  ['IPv4-mapped IPv6, dotted', '[::ffff:127.0.0.1]'],
  ['IPv4-mapped IPv6, hex', '[::ffff:7f00:1]'],
  ['IPv4-mapped IPv6, long form', '[0:0:0:0:0:ffff:127.0.0.1]'],
  ['IPv4-mapped IPv6 of a metadata address', '[::ffff:169.254.169.254]'],
  ['IPv4-compatible IPv6, dotted', '[::127.0.0.1]'],
  ['IPv4-compatible IPv6, hex', '[::7f00:1]'],
  ['IPv4-translated IPv6', '[::ffff:0:127.0.0.1]'],
  ['IPv6 loopback, long form', '[0:0:0:0:0:0:0:1]'],
  ['IPv6 unspecified', '[::]'],
  ['NAT64 of loopback', '[64:ff9b::127.0.0.1]'],
  ['6to4 of loopback', '[2002:7f00:1::]'],
  ['IPv6 link-local', '[fe80::1]'],
  ['IPv6 unique-local', '[fd00::1]'],
];

describe('production mode: every spelling of a refused address, on every route kind', () => {
  let t: TestFerry;
  let dlqId: string;

  beforeAll(async () => {
    t = await startFerry({
      clock: new ManualClock(Date.now()),
      engine: false,
      args: ['--production'],
    });
    dlqId = await failedDlqEntry(t);
    await t.api('/v2/topics/g/endpoints', {
      method: 'POST',
      body: JSON.stringify({ endpoints: [{ url: PUBLIC }] }),
    });
  }, 60_000);
  afterAll(async () => {
    await t.close();
  });

  async function expectRefused(what: string, res: Response, field: string): Promise<void> {
    const text = await res.text();
    expect(res.status, `${what}: ${text}`).toBe(400);
    const { error } = JSON.parse(text) as { error: string };
    expect(error, what).toMatch(/private or loopback address \(refused in production mode\)/);
    expect(error, what).toContain(field);
  }

  it.each(REFUSED_HOSTS)('%s (%s)', async (_spelling, host) => {
    const url = `http://${host}/x`;
    // A header value is bytes: a non-ASCII spelling travels percent-encoded there, which the URL
    // parser decodes before it reads the host.
    const inHeader = /[^\x20-\x7e]/.test(url) ? encodeURI(url) : url;
    const post = (path: string, headers: Record<string, string> = {}, body?: string) =>
      t.api(path, { method: 'POST', headers, body });
    await expectRefused('publish', await post(`/v2/publish/${url}`), 'destination');
    await expectRefused('enqueue', await post(`/v2/enqueue/q/${url}`), 'destination');
    await expectRefused(
      'batch',
      await post('/v2/batch', {}, JSON.stringify([{ destination: url }])),
      'destination',
    );
    for (const header of ['Callback', 'Failure-Callback', 'Workflow-Url']) {
      const headers: Record<string, string> = { [`Svc-${header}`]: inHeader };
      if (header === 'Workflow-Url') {
        Object.assign(headers, { 'Svc-Workflow-RunId': 'wfr_x', 'Svc-Workflow-Init': 'true' });
      }
      await expectRefused(
        `publish Svc-${header}`,
        await post(`/v2/publish/${PUBLIC}`, headers),
        `Svc-${header}`,
      );
    }
    const cron = { 'Svc-Cron': '* * * * *' };
    await expectRefused('schedule', await post(`/v2/schedules/${url}`, cron), 'destination');
    await expectRefused(
      'schedule Svc-Callback',
      await post(`/v2/schedules/${PUBLIC}`, { ...cron, 'Svc-Callback': inHeader }),
      'Svc-Callback',
    );
    await expectRefused(
      'URL-group endpoint',
      await post('/v2/topics/g/endpoints', {}, JSON.stringify({ endpoints: [{ url }] })),
      'endpoints[0].url',
    );
    await expectRefused(
      'URL-group default callback',
      await t.api('/v2/topics/g', {
        method: 'PATCH',
        body: JSON.stringify({ headers: { 'Svc-Failure-Callback': url } }),
      }),
      'Svc-Failure-Callback',
    );
    await expectRefused(
      'DLQ retry override',
      await post(`/v2/dlq/retry/${dlqId}`, { 'Svc-Callback': inHeader }),
      'Svc-Callback',
    );

    // Nothing of any of them was stored.
    expect(await (await t.api('/v2/schedules')).json()).toEqual([]);
    const group = (await (await t.api('/v2/topics/g')).json()) as {
      endpoints: unknown[];
      headers?: unknown;
    };
    expect(group.endpoints).toHaveLength(1);
    expect(group.headers).toBeUndefined();
    const waiting = (await (await t.api('/v2/messages')).json()) as { messages: unknown[] };
    expect(waiting.messages).toEqual([]);
    expect((await t.api(`/v2/dlq/${dlqId}`)).status).toBe(200);
  });

  it('a public address in an unusual spelling is accepted (the check reads the address, not the text)', async () => {
    for (const host of ['134744072', '0x8.0x8.0x8.0x8', '8.8.8.8.', '8.8.2056']) {
      const res = await t.api(`/v2/publish/http://${host}/x`, { method: 'POST' });
      expect(res.status, `${host}: ${await res.clone().text()}`).toBe(200);
      const { messageId } = (await res.json()) as { messageId: string };
      expect((await t.api(`/v2/messages/${messageId}`, { method: 'DELETE' })).status).toBeLessThan(
        300,
      );
    }
  });
});
