/**
 * The console with hostile data, in a real browser (headless Chromium) against a real Ferry on
 * SQLite: names `.` and `..` stored before Ferry refused them (no action goes to another route),
 * names and URLs hundreds of characters long (the row's actions stay on screen), a message with
 * 10,000 headers (a bounded number shown), bidi overrides in untrusted text (isolated from the
 * UI's), characters headers cannot carry in the Publish form, message pages at a phone's width,
 * and per-row buttons named with their row.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Locator, Page } from 'playwright-core';
import {
  eventually,
  launchBrowser,
  signIn,
  type ConsolePage,
  type TestBrowser,
} from './helpers/browser.js';
import { startFerry, type TestFerry } from './helpers/ferry.js';
import { startReceiver, type Receiver } from './helpers/receiver.js';
import { buildMessage } from '../src/core/build-message.js';
import { DEFAULT_PLANS } from '../src/core/plans.js';
import { parsePublishSettings } from '../src/core/publish-request.js';
import type { Schedule } from '../src/core/schedule.js';

let t: TestFerry;
let browser: TestBrowser;
let receiver: Receiver;
const pages: ConsolePage[] = [];

async function open(path: string, width = 1280): Promise<Page> {
  const p = await browser.newPage();
  pages.push(p);
  await p.page.setViewportSize({ width, height: 800 });
  await signIn(p.page, t.url, t.token, path);
  return p.page;
}

/** Navigates inside the console (a client-side route change: the session stays). */
async function go(page: Page, path: string): Promise<void> {
  await page.goto(`${t.url}/console${path}`);
  await page.getByRole('navigation', { name: 'Console' }).waitFor();
}

/** The table row whose first cell is exactly `name`. */
const rowOf = (page: Page, table: string, name: string): Locator =>
  page
    .getByRole('table', { name: table })
    .getByRole('row')
    .filter({ has: page.getByRole('cell', { name, exact: true }).first() });

beforeAll(async () => {
  // The browser first: without Chromium this fails before a Ferry (and its data directory) is
  // started that afterAll, with nothing assigned yet, could not close.
  browser = await launchBrowser();
  [t, receiver] = await Promise.all([startFerry(), startReceiver()]);
});

afterAll(async () => {
  await Promise.all([browser?.close(), receiver?.close()]);
  await t?.close();
});

/**
 * Stores what Ferry refuses to create now, as an older version stored it: queues, URL groups,
 * schedules and a workflow run named `.` and `..`, and (through a schedule's tick, which reads
 * stored settings as they were accepted) a flow-control key `..`.
 */
async function storeDotNames(): Promise<void> {
  const ex = t.ferry.driver.executor;
  const accountId = t.account.id;
  const now = Date.now();
  for (const name of ['.', '..']) {
    await ex.queueUpsert({ accountId, name, now, maxQueues: 100, paused: true });
    await ex.urlGroupPut({
      group: {
        accountId,
        name,
        createdAt: now,
        updatedAt: now,
        endpoints: [{ url: receiver.url }],
      },
    });
    const schedule: Schedule = {
      id: name,
      accountId,
      cron: '0 0 1 1 *',
      destination: `${receiver.url}/dot`,
      createdAt: now,
      paused: false,
      request: {
        headers: {
          'svc-delay': ['1h'],
          'svc-flow-control-key': ['..'],
          'svc-flow-control-value': ['parallelism=1'],
        },
        query: [],
      },
      spec: { method: 'POST', headers: {}, retries: 0 },
      body: new TextEncoder().encode('dot'),
      callerIp: '127.0.0.1',
      nextScheduleTime: now - 1_000,
    };
    expect(await ex.scheduleUpsert({ schedule, maxSchedules: 100 })).toBe('created');
    await ex.workflowRunInsert({
      run: {
        accountId,
        runId: name,
        url: `${receiver.url}/wf`,
        state: 'RUN_STARTED',
        createdAt: now,
        updatedAt: now,
        callerIp: '127.0.0.1',
        settings: { headers: {}, retries: 0 },
      },
    });
  }
  await t.ferry.scheduler.runOnce();
}

describe('console with hostile data', () => {
  it('shows names "." and ".." but sends none of their actions to another route', async () => {
    await storeDotNames();
    const fine = await t.api(`/v2/queues`, {
      method: 'POST',
      body: JSON.stringify({ queueName: 'fine', paused: true }),
    });
    expect(fine.status).toBe(200);
    const page = await open('/queues');
    const sent: string[] = [];
    page.on('request', (r) => {
      if (r.method() !== 'GET') sent.push(`${r.method()} ${new URL(r.url()).pathname}`);
    });

    /** Every button of `row` is off, described by the reason shown in the row. */
    const expectOff = async (row: Locator): Promise<void> => {
      await row.waitFor();
      const buttons = row.getByRole('button');
      expect(await buttons.count()).toBeGreaterThan(0);
      for (const button of await buttons.all()) {
        expect(await button.isDisabled()).toBe(true);
        const described = (await button.getAttribute('aria-describedby')) ?? '';
        expect(await page.locator(`[id="${described}"]`).innerText()).toMatch(
          /browsers drop "\." and "\.\." from URL paths/,
        );
      }
    };

    for (const name of ['.', '..']) await expectOff(rowOf(page, 'Queues', name));
    // A queue with a plain name keeps its actions.
    expect(await rowOf(page, 'Queues', 'fine').getByRole('button').first().isDisabled()).toBe(
      false,
    );

    await go(page, '/schedules');
    for (const name of ['.', '..']) await expectOff(rowOf(page, 'Schedules', name));

    await go(page, '/flow-control');
    await expectOff(rowOf(page, 'Flow-control keys', '..'));

    // URL groups and workflow runs: shown, with no link to a page the URL cannot reach.
    await go(page, '/url-groups');
    const groups = page.getByRole('table', { name: 'URL groups' });
    await groups.getByRole('row').nth(2).waitFor();
    expect(await groups.getByRole('link').count()).toBe(0);
    expect(await groups.getByText(/browsers drop/).count()).toBe(2);
    await go(page, '/workflows');
    const runs = page.getByRole('table', { name: 'Workflow runs' });
    await runs.getByRole('row').nth(2).waitFor();
    expect(await runs.getByRole('link').count()).toBe(0);

    // Typed into a form, such a name is refused before any request, saying why.
    await go(page, '/url-groups');
    await page.getByRole('textbox', { name: 'Group' }).fill('.');
    await page.getByLabel('Endpoint URL').fill(receiver.url);
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    await page.getByText('URL group "." cannot be used: browsers drop').waitFor();
    await go(page, '/publish');
    await page.getByLabel('Destination').fill('..');
    await page.getByRole('button', { name: 'Publish', exact: true }).click();
    await page.getByText('Destination ".." cannot be used: browsers drop').waitFor();

    expect(sent).toEqual([]);
  });

  it('keeps a row’s buttons on screen beside names and URLs hundreds of characters long', async () => {
    const long = (c: string, n: number): string => c.repeat(n);
    const url = `${receiver.url}/${long('u', 300)}`;
    const scheduleId = long('s', 256);
    const queue = long('q', 200);
    const key = long('k', 256);
    const group = long('g', 256);
    const endpoint = long('e', 256);
    const calls = [
      t.api(`/v2/schedules/${url}`, {
        method: 'POST',
        headers: { 'Svc-Cron': '0 0 1 1 *', 'Svc-Schedule-Id': scheduleId },
      }),
      t.api('/v2/queues', { method: 'POST', body: JSON.stringify({ queueName: queue }) }),
      t.api(`/v2/publish/${url}`, {
        method: 'POST',
        headers: {
          'Svc-Delay': '1h',
          'Svc-Flow-Control-Key': key,
          'Svc-Flow-Control-Value': 'parallelism=1',
        },
      }),
      t.api(`/v2/topics/${group}/endpoints`, {
        method: 'POST',
        body: JSON.stringify({ endpoints: [{ url, name: endpoint }] }),
      }),
    ];
    for (const res of await Promise.all(calls)) expect(res.status).toBe(200);

    const page = await open('/schedules');
    /**
     * Each button of the row holding `text` lies within the viewport and the table's frame, and
     * the text is shown whole (wrapped) or, when `cut` (URLs), in the cell's title.
     */
    const expectReachable = async (text: string, cut = false): Promise<void> => {
      const row = page.getByRole('row').filter({ hasText: text.slice(0, 40) });
      await row.waitFor();
      const frame = await page.locator('main').boundingBox();
      const width = page.viewportSize()?.width ?? 0;
      for (const button of await row.getByRole('button').all()) {
        const box = await button.boundingBox();
        expect(box, text.slice(0, 20)).not.toBeNull();
        expect(box!.x + box!.width, text.slice(0, 20)).toBeLessThanOrEqual(
          Math.min(width, frame!.x + frame!.width),
        );
      }
      const cell = row
        .getByRole('cell')
        .filter({ hasText: text.slice(0, 40) })
        .first();
      const isCut = await cell.evaluate(
        (e: { scrollWidth: number; clientWidth: number }) => e.scrollWidth > e.clientWidth,
      );
      expect(isCut, text.slice(0, 20)).toBe(cut);
      if (cut) expect((await cell.getAttribute('title')) ?? '', text.slice(0, 20)).toContain(text);
      else expect((await cell.innerText()).replace(/\s/g, '')).toContain(text);
    };
    await expectReachable(scheduleId);
    await expectReachable(url, true);
    await go(page, '/queues');
    await expectReachable(queue);
    await go(page, '/flow-control');
    await expectReachable(key);
    await go(page, `/url-groups/${group}`);
    await expectReachable(endpoint);
    await expectReachable(url, true);
    // The page's own title wraps too: nothing scrolls sideways.
    const overflow = await page.evaluate<number>(
      'document.documentElement.scrollWidth - document.documentElement.clientWidth',
    );
    expect(overflow).toBeLessThanOrEqual(0);
  });

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

  it('names every per-row button with its row, so two rows’ buttons never share a name', async () => {
    for (const id of ['row-a', 'row-b']) {
      const res = await t.api(`/v2/schedules/${receiver.url}/rows`, {
        method: 'POST',
        headers: { 'Svc-Cron': '0 0 1 1 *', 'Svc-Schedule-Id': id },
      });
      expect(res.status).toBe(200);
    }
    const add = await t.api('/v2/topics/rows/endpoints', {
      method: 'POST',
      body: JSON.stringify({
        endpoints: [{ url: `${receiver.url}/a`, name: 'first' }, { url: `${receiver.url}/b` }],
      }),
    });
    expect(add.status).toBe(200);

    /** Each button of each row of `table` names one of the row's cells; no two share a name. */
    const expectRowNames = async (page: Page, table: string): Promise<void> => {
      const rows = page.getByRole('table', { name: table }).locator('tbody tr');
      await rows.nth(1).waitFor();
      const names: string[] = [];
      for (const row of await rows.all()) {
        const cells = (await row.getByRole('cell').allInnerTexts()).filter((c) => c.trim());
        const buttons = [...(await row.ariaSnapshot()).matchAll(/- button "([^"]*)"/g)];
        for (const [, name = ''] of buttons) {
          expect(
            cells.some((cell) => name.includes(cell.trim())),
            `${table}: "${name}"`,
          ).toBe(true);
          names.push(name);
        }
      }
      expect(names.length).toBeGreaterThan(1);
      expect(new Set(names).size, names.join(', ')).toBe(names.length);
    };

    const page = await open('/schedules');
    await expectRowNames(page, 'Schedules');
    await page
      .getByRole('row')
      .filter({ hasText: 'row-a' })
      .getByRole('button', { name: 'Delete schedule row-a' })
      .click();
    await page.getByRole('group', { name: 'Delete schedule row-a?' }).waitFor();
    await go(page, '/url-groups/rows');
    await expectRowNames(page, 'Endpoints');
    await page.getByRole('button', { name: 'Remove endpoint first' }).waitFor();
    await page.getByRole('button', { name: `Remove endpoint ${receiver.url}/b` }).waitFor();
    await go(page, '/queues');
    await expectRowNames(page, 'Queues');
  });
});
