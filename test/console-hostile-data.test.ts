/**
 * The console with hostile content, in a real browser (headless Chromium) against a real Ferry
 * on SQLite: a message with 10,000 headers (a bounded number shown), message pages with values
 * hundreds of characters long at a phone's width, characters a header cannot carry in the
 * Publish form, and bidi overrides in untrusted text (isolated from the console's own words).
 * Hostile names are in console-hostile-names.test.ts.
 */
import { describe, expect, it } from 'vitest';
import type { Locator, Page } from 'playwright-core';
import {
  eventually,
  useConsoleSuite,
  goTo,
  openSignedIn,
  type ConsolePage,
  type TestBrowser,
} from './helpers/browser.js';
import type { TestFerry } from './helpers/ferry.js';
import { startReceiver, type Receiver } from './helpers/receiver.js';
import { buildMessage } from '../src/core/build-message.js';
import { DEFAULT_PLANS } from '../src/core/plans.js';
import { parsePublishSettings } from '../src/core/publish-request.js';

let t: TestFerry;
let browser: TestBrowser;
let receiver: Receiver;
const pages: ConsolePage[] = [];

const open = (path: string, width?: number): Promise<Page> =>
  openSignedIn(browser, pages, t, path, width);

const go = (page: Page, path: string): Promise<void> => goTo(page, t.url, path);

useConsoleSuite((suite) => {
  ({ browser, t, receiver } = suite);
});

describe('console with hostile content', () => {
  it('shows the first 100 of a message’s 10,000 headers, and the rest on request', async () => {
    // The message a batch entry with 10,000 Svc-Forward-* headers makes, stored through the
    // publisher: the API takes about 16 s to read that many headers (its header map is searched
    // once per name), which this test of the console need not wait for.
    const now = Date.now();
    const settings = parsePublishSettings({
      prefix: 'Svc',
      headers: { 'svc-delay': '1h' },
      query: new URLSearchParams(),
      plan: DEFAULT_PLANS.paid,
      now,
    });
    for (let i = 0; i < 10_000; i++) settings.headers[`X-H${i}`] = [`value ${i}`];
    const message = buildMessage({
      account: t.account,
      url: `${receiver.url}/many`,
      settings,
      body: new TextEncoder().encode('many'),
      callerIp: '127.0.0.1',
      now,
    });
    const [{ messageId } = { messageId: '' }] = await t.ferry.publisher.publish([{ message }]);

    const page = await open(`/messages?messageId=${messageId}`);
    const table = page.getByRole('table', { name: 'Message headers' });
    await table.waitFor();
    expect(await table.getByRole('row').count()).toBe(100);
    await page.getByText('Showing the first 100 of 10,000 headers.').waitFor();
    await page.getByRole('button', { name: 'Show all 10,000 message headers' }).click();
    await expect.poll(() => table.getByRole('row').count()).toBe(10_000);
    expect(await table.getByRole('row').last().innerText()).toMatch(/X-H9999\s+value 9999/);

    // The message's log page shows its request headers the same way.
    await go(page, `/logs/${messageId}`);
    const logged = page.getByRole('table', { name: 'Request headers' });
    await logged.waitFor();
    expect(await logged.getByRole('row').count()).toBe(100);
    await page.getByRole('button', { name: 'Show all 10,000 request headers' }).waitFor();
  });
  it('fits message pages to a phone’s width, however long their values', async () => {
    const long = (c: string, n: number): string => c.repeat(n);
    const failing = await startReceiver(() => ({
      status: 500,
      headers: { 'X-Long-Answer': long('a', 300) },
      body: long('b', 2_000),
    }));
    try {
      const headers = {
        'Svc-Label': long('l', 256),
        [`Svc-Forward-X-${long('n', 100)}`]: long('v', 300),
        'content-type': 'application/json',
      };
      const body = JSON.stringify({ [long('k', 300)]: long('w', 2_000) });
      const path = `/${long('p', 300)}?${long('q', 100)}=1`;
      const failed = await t.api(`/v2/publish/${failing.url}${path}`, {
        method: 'POST',
        headers: { ...headers, 'Svc-Retries': '0' },
        body,
      });
      const delayed = await t.api(`/v2/publish/${failing.url}${path}`, {
        method: 'POST',
        headers: { ...headers, 'Svc-Delay': '1h' },
        body,
      });
      const { messageId } = (await failed.json()) as { messageId: string };
      const waiting = ((await delayed.json()) as { messageId: string }).messageId;
      let dlqId = '';
      await eventually(async () => {
        const list = (await (await t.api(`/v2/dlq?messageId=${messageId}`)).json()) as {
          messages: { dlqId: string }[];
        };
        dlqId = list.messages[0]?.dlqId ?? '';
        return dlqId !== '';
      }, 'the message reached the DLQ');

      const page = await open(`/logs/${messageId}`, 390);
      const fits = async (what: string, ready: Locator): Promise<void> => {
        await ready.waitFor();
        const overflow = await page.evaluate<number>(
          'document.documentElement.scrollWidth - document.documentElement.clientWidth',
        );
        expect(overflow, what).toBeLessThanOrEqual(0);
      };
      await fits('a message’s log', page.getByText('HTTP 500 at'));
      await go(page, `/messages?messageId=${waiting}`);
      await fits('a waiting message', page.getByLabel('Message body'));
      await go(page, `/dlq/${dlqId}`);
      await fits('a DLQ entry', page.getByLabel('Response body'));
    } finally {
      await failing.close();
    }
  });
  it('publishes labels and keys beyond Latin-1, and names a field no header can carry', async () => {
    const target = await startReceiver();
    try {
      const page = await open('/publish');
      const sent: string[] = [];
      page.on('request', (r) => {
        if (r.method() === 'POST') sent.push(r.url());
      });
      await page.getByLabel('Destination').fill(`${target.url}/unicode`);
      await page.getByLabel('Label').fill('注文,café');
      await page.getByLabel('Flow-control key').fill('顧客-7');
      await page.getByLabel('Parallelism').fill('1');
      await page.getByRole('button', { name: 'Add header' }).click();
      await page.getByLabel('Header 1 name').fill('X-Note');
      await page.getByLabel('Header 1 value').fill('im 日本');
      const publish = page.getByRole('button', { name: 'Publish', exact: true });
      await publish.click();
      // Said before sending, naming the field and the character: nothing left the page.
      await page
        .getByRole('alert')
        .getByText('Header 1 value holds U+65E5 "日": a header value can only carry characters')
        .waitFor();
      await page.getByLabel('Header 1 value').fill('plain');
      await page.getByLabel('Content type').fill('text/plain; charset=日本');
      await publish.click();
      await page.getByRole('alert').getByText('Content type holds U+65E5 "日"').waitFor();
      expect(sent).toEqual([]);

      await page.getByLabel('Content type').fill('text/plain');
      await publish.click();
      const link = page.getByRole('status').getByRole('link');
      await link.waitFor();
      const messageId = await link.innerText();
      const [delivered] = await target.waitFor(1);
      expect(delivered?.headers['x-note']).toBe('plain');
      const events = (await (await t.api(`/v2/events?messageId=${messageId}`)).json()) as {
        events: { labels?: string[]; flowControlKey?: string }[];
      };
      expect(events.events[0]).toMatchObject({
        labels: ['注文', 'café'],
        flowControlKey: '顧客-7',
      });
    } finally {
      await target.close();
    }
  });
  it('keeps bidi controls in untrusted text from reordering the page’s own words', async () => {
    const RLO = '\u202E';
    // Two labels: the first must not reorder the second either.
    const label = `lab${RLO}el,second`;
    const key = `key${RLO}x`;
    const body = JSON.stringify({ note: `abc${RLO} evil` });
    const answering = await startReceiver(() => ({ status: 200, body: `ok${RLO} done` }));
    try {
      // Labels and keys beyond Latin-1 come as query parameters (a header cannot carry them).
      const settings = `svc-label=${encodeURIComponent(label)}&svc-flow-control-key=${encodeURIComponent(key)}`;
      const publish = async (extra: Record<string, string>): Promise<string> => {
        const res = await t.api(`/v2/publish/${answering.url}/bidi?${settings}`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'Svc-Flow-Control-Value': 'rate=100',
            ...extra,
          },
          body,
        });
        expect(res.status).toBe(200);
        return ((await res.json()) as { messageId: string }).messageId;
      };
      const delivered = await publish({});
      const waiting = await publish({ 'Svc-Delay': '1h' });
      await eventually(async () => {
        const res = await t.api(`/v2/events?messageId=${delivered}&state=DELIVERED`);
        return ((await res.json()) as { events: unknown[] }).events.length > 0;
      }, 'the message was delivered');

      /** The planted values, as the console shows them (bodies pretty-printed). */
      const planted = [
        `lab${RLO}el`,
        key,
        JSON.stringify(JSON.parse(body), null, 2),
        `ok${RLO} done`,
      ];
      /**
       * Every text holding a bidi control is alone, exactly one planted value, in a <bdi> (or
       * an inline element isolating like one) or in a block of its own: it cannot reach the
       * page's words, nor another value's.
       */
      const expectIsolated = async (page: Page, what: string): Promise<void> => {
        const leaks = await page.evaluate<string[]>(`(() => {
          const planted = ${JSON.stringify(planted)};
          const controls = /[\\u202A-\\u202E\\u2066-\\u2069]/;
          const leaks = [];
          const walk = document.createTreeWalker(document.querySelector('main'), NodeFilter.SHOW_TEXT);
          let found = 0;
          for (let n = walk.nextNode(); n; n = walk.nextNode()) {
            if (!controls.test(n.data)) continue;
            found++;
            for (let e = n.parentElement; e; e = e.parentElement) {
              const style = getComputedStyle(e);
              // Blocks compute "isolate" too (HTML's style sheet), which changes nothing there.
              const inline = style.display.startsWith('inline');
              const isolates = ['isolate', 'isolate-override', 'plaintext'].includes(style.unicodeBidi);
              if (inline && !isolates) continue;
              if (!planted.includes(e.textContent)) leaks.push(e.tagName + ': ' + e.textContent.slice(0, 80));
              break;
            }
          }
          return found === 0 ? ['no planted text on the page'] : leaks;
        })()`);
        expect(leaks, what).toEqual([]);
      };

      const page = await open(`/logs?messageId=${delivered}`);
      await page.getByRole('row').filter({ hasText: 'DELIVERED' }).waitFor();
      await expectIsolated(page, 'Logs');
      await go(page, `/logs/${delivered}`);
      await page.getByLabel('Response 1 body').waitFor();
      await expectIsolated(page, 'a message’s log');
      await go(page, `/messages?messageId=${waiting}`);
      await page.getByLabel('Message body').waitFor();
      await expectIsolated(page, 'Messages');

      await go(page, `/flow-control?search=key`);
      const row = page.getByRole('row').filter({ hasText: 'key' });
      await row.getByRole('button', { name: `Pause key ${key}` }).click();
      const notice = page.getByRole('status').filter({ hasText: 'paused.' });
      await notice.waitFor();
      await row.getByRole('button', { name: `Pin key ${key}`, exact: true }).click();
      await page.getByRole('heading', { name: `Pin limits of ${key}` }).waitFor();
      await expectIsolated(page, 'Flow control');
      // And as drawn: the notice's own words ": paused." still read left to right.
      const order = await page.evaluate<number[]>(`(() => {
        const notice = [...document.querySelectorAll('[role=status]')].find((e) => e.textContent.endsWith('paused.'));
        const walk = document.createTreeWalker(notice, NodeFilter.SHOW_TEXT);
        const xs = [];
        for (let n = walk.nextNode(); n; n = walk.nextNode()) {
          if (n.data.includes('\u202E')) continue; // the key itself
          for (let i = 0; i < n.data.length; i++) {
            if (!':paused'.includes(n.data[i]) || n.data[i] === ' ') continue;
            const r = document.createRange();
            r.setStart(n, i);
            r.setEnd(n, i + 1);
            xs.push(r.getBoundingClientRect().left);
          }
        }
        return xs;
      })()`);
      // ":", "p", "a", "u", "s", "e", "d": from left to right.
      expect(order).toHaveLength(7);
      expect([...order].sort((a, b) => a - b)).toEqual(order);
      await t.api(`/v2/messages?flowControlKey=${encodeURIComponent(key)}`, { method: 'DELETE' });
    } finally {
      await answering.close();
    }
  });

  it('raises no script error or CSP violation', () => {
    // Refused calls log "Failed to load resource"; nothing else may show.
    expect(
      pages.flatMap((p) => p.errors).filter((e) => !e.startsWith('Failed to load resource')),
    ).toEqual([]);
  });
});
