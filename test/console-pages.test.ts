/**
 * The console's operating pages in a real browser (headless Chromium) against a real Ferry on
 * SQLite with real receivers: Overview refreshing on its own, Queues, Flow control, Usage,
 * the Messages list, DLQ retry with overrides, management sign-in with Accounts (plan, budget,
 * token reset), the console on `--mgmt-port`, phone width, accessible names, and no request to
 * any host but Ferry's.
 */
import { describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import {
  eventually,
  useConsoleSuite,
  screenshot,
  goTo,
  signIn,
  type ConsolePage,
  type TestBrowser,
} from './helpers/browser.js';
import { startFerry, type TestFerry } from './helpers/ferry.js';
import { createMgmtUser, createQueueAccount, withToken } from './helpers/mgmt.js';
import { startReceiver, type Receiver } from './helpers/receiver.js';

let t: TestFerry;
let browser: TestBrowser;
let receiver: Receiver;
const pages: ConsolePage[] = [];

async function open(path: string): Promise<ConsolePage> {
  const p = await browser.newPage();
  pages.push(p);
  await signIn(p.page, t.url, t.token, path);
  return p;
}

const go = (page: Page, path: string): Promise<void> => goTo(page, t.url, path);

async function publish(path: string, headers: Record<string, string> = {}): Promise<string> {
  const res = await t.api(`/v2/publish/${receiver.url}${path}`, {
    method: 'POST',
    headers,
    body: 'hi',
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { messageId: string }).messageId;
}

/** Every control in `page`'s main area has an accessible name (from its ARIA snapshot). */
async function expectNamedControls(page: Page): Promise<void> {
  const snapshot = await page.locator('body').ariaSnapshot();
  const unnamed = snapshot
    .split('\n')
    .filter((line) =>
      /^\s*- (button|link|textbox|combobox|checkbox|spinbutton|radio)\s*(:|\[|$)/.test(line),
    );
  expect(unnamed, snapshot).toEqual([]);
}

/** `expect.poll` with room for the pages' 5-second refresh on a loaded machine. */
const poll = <T>(fn: () => Promise<T> | T, options: { timeout?: number } = {}) =>
  expect.poll(fn, { timeout: 12_000, ...options });

useConsoleSuite((suite) => {
  ({ browser, t, receiver } = suite);
});

describe('console pages', () => {
  it('Overview shows the last hour and the counts now, and refreshes on its own', async () => {
    const failing = await startReceiver(() => ({ status: 500 }));
    try {
      const delivered = await publish('/ov');
      await publish('/ov-later', { 'Svc-Delay': '1h' });
      await t.api(`/v2/publish/${failing.url}/ov`, {
        method: 'POST',
        headers: { 'Svc-Retries': '0' },
      });
      // A workflow run whose first step fails: into the workflow DLQ.
      await t.api(`/v2/publish/${failing.url}/ov-wf`, {
        method: 'POST',
        headers: {
          'Svc-Retries': '0',
          'Svc-Workflow-RunId': 'wfr_overview',
          'Svc-Workflow-Init': 'true',
        },
      });
      await eventually(async () => {
        const now = (await (await t.api('/v2/usage/now')).json()) as {
          dlq: number;
          workflowDlq: number;
        };
        return (
          now.dlq === 1 && now.workflowDlq === 1 && receiver.requests.some((r) => r.path === '/ov')
        );
      }, `${delivered} delivered, the failure in the DLQ and the run in the workflow DLQ`);

      const { page } = await open('/overview');
      const now = page.getByRole('definition').filter({ hasText: /./ });
      const figure = (label: string) =>
        page.locator('.figures > div').filter({ hasText: label }).locator('dd');
      await poll(() => figure('In the DLQ').innerText()).toBe('1');
      expect(await figure('Workflow DLQ').innerText()).toBe('1');
      expect(await figure('Waiting (due or delayed)').innerText()).toBe('1');
      await poll(() => figure('Published in the last hour').innerText()).toMatch(/^4 /);
      expect(await figure('Delivered in the last hour').innerText()).toMatch(/^1 /);
      expect(await figure('Failed in the last hour').innerText()).toMatch(/^2 /);
      expect(await now.count()).toBeGreaterThan(4);
      // uPlot was loaded on demand and drew the chart.
      const chart = page.getByRole('figure', { name: 'Messages per minute, last hour' });
      await chart.locator('canvas').first().waitFor();
      // Pointing at it gives the minute in the console's form, not the chart library's.
      const over = await chart.locator('.u-over').boundingBox();
      if (!over) throw new Error('the chart has no plotting area');
      await page.mouse.move(over.x + over.width / 2, over.y + over.height / 2);
      await page.mouse.move(over.x + over.width / 2 + 5, over.y + over.height / 2);
      const minute = chart.locator('.u-legend .u-series').first().locator('.u-value');
      await poll(() => minute.innerText()).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:00$/);

      // Without a reload: one more delivered message shows within the refresh interval.
      await publish('/ov2');
      await expect
        .poll(() => figure('Delivered in the last hour').innerText(), { timeout: 12_000 })
        .toMatch(/^2 /);
      // The refresh put its data into the drawn chart: the pointer still has a reading (the
      // window may have moved on by a minute under it), where a chart drawn anew has none.
      expect(await minute.innerText()).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:00$/);
      await screenshot(page, 'overview');
      await expectNamedControls(page);
      // The waiting messages' figure opens the Messages list filtered by those states.
      await figure('Waiting (due or delayed)').getByRole('link').click();
      await page.waitForURL(/\/console\/messages\?state=DUE&state=DELAYED$/);
      const rows = page.getByRole('table', { name: 'Waiting messages' }).getByRole('row');
      await rows.nth(1).waitFor();
      expect(await rows.count()).toBe(2); // the header and the one message
      expect(await rows.nth(1).innerText()).toMatch(/\tDelayed until /);
    } finally {
      await failing.close();
    }
  });

  it('Queues: lag, pause, resume and delete; Flow control: counts, pause, pin, unpin, reset', async () => {
    expect(
      (
        await t.api('/v2/queues', {
          method: 'POST',
          body: JSON.stringify({ queueName: 'console-q', parallelism: 2, paused: true }),
        })
      ).status,
    ).toBe(200);
    for (let i = 0; i < 3; i++) {
      const res = await t.api(`/v2/enqueue/console-q/${receiver.url}/q${i}`, {
        method: 'POST',
        body: 'q',
      });
      expect(res.status).toBe(200);
    }
    const { page } = await open('/queues');
    const row = page.getByRole('row').filter({ hasText: 'console-q' });
    await row.getByRole('cell', { name: 'Paused' }).waitFor();
    expect(await row.getByRole('cell').allInnerTexts()).toEqual(
      expect.arrayContaining(['console-q', '2', '3', 'Paused']),
    );
    await screenshot(page, 'queues');
    await expectNamedControls(page);
    await row.getByRole('button', { name: 'Resume queue console-q' }).click();
    await eventually(
      () =>
        Promise.resolve(
          ['/q0', '/q1', '/q2'].every((p) => receiver.requests.some((r) => r.path === p)),
        ),
      'the queue delivered its three messages',
    );
    await poll(() => row.getByRole('cell').nth(2).innerText()).toBe('0');
    await row.getByRole('button', { name: 'Pause queue console-q' }).click();
    await row.getByRole('cell', { name: 'Paused' }).waitFor();
    await row.getByRole('button', { name: 'Delete queue console-q' }).click();
    await row.getByRole('button', { name: 'Yes, delete' }).click();
    await page.getByText('Deleted queue console-q').waitFor();
    expect((await t.api('/v2/queues/console-q')).status).toBe(404);

    // Flow control: parallelism 1 to a receiver that holds the first request open.
    const holding = await startReceiver(() => ({ hang: true }));
    try {
      for (let i = 0; i < 3; i++) {
        const res = await t.api(`/v2/publish/${holding.url}/fc${i}`, {
          method: 'POST',
          headers: {
            'Svc-Flow-Control-Key': 'console-key',
            'Svc-Flow-Control-Value': 'parallelism=1',
          },
        });
        expect(res.status).toBe(200);
      }
      await holding.waitFor(1);
      await go(page, '/flow-control');
      const key = page.getByRole('row').filter({ hasText: 'console-key' });
      await poll(() => key.getByRole('cell').allInnerTexts()).toEqual([
        'console-key',
        '1 / 1',
        '0 / ∞',
        '1 s',
        '2',
        'Active',
        expect.any(String),
      ]);
      await poll(() => page.getByRole('definition').first().innerText()).toMatch(
        /^1 of \d+ in flight$/,
      );
      await screenshot(page, 'flow-control');
      await expectNamedControls(page);

      const gate = async () =>
        (await (await t.api('/v2/flowControl/console-key')).json()) as Record<string, unknown>;
      await key.getByRole('button', { name: 'Pause key console-key' }).click();
      await poll(async () => (await gate()).isPaused).toBe(true);
      await key.getByRole('button', { name: 'Resume key console-key' }).click();
      await poll(async () => (await gate()).isPaused).toBe(false);

      await key.getByRole('button', { name: 'Pin key console-key', exact: true }).click();
      const pin = page.getByRole('form', { name: 'Pin limits of console-key' });
      await pin.getByLabel('Rate').fill('5');
      await pin.getByLabel('Period').fill('1m');
      await pin.getByRole('button', { name: 'Pin limits' }).click();
      await poll(gate).toMatchObject({ isPinnedRate: true, rateMax: 5, ratePeriod: 60 });
      await key.getByRole('cell', { name: '/ 5 (pinned)' }).waitFor();
      await key.getByRole('button', { name: 'Unpin key console-key' }).click();
      await poll(async () => (await gate()).isPinnedRate).toBe(false);
      await key.getByRole('button', { name: 'Reset rate of key console-key' }).click();
      await page.getByText('console-key: rate reset.').waitFor();
    } finally {
      await t.api('/v2/messages?flowControlKey=console-key', { method: 'DELETE' });
      await holding.close();
    }
  });

  it('Usage charts each period; Messages lists waiting ones; DLQ retries with overrides', async () => {
    const { page } = await open('/usage');
    await page.getByRole('figure', { name: 'Daily requests' }).locator('canvas').first().waitFor();
    await page.getByRole('link', { name: '7d', exact: true }).click();
    await page.waitForURL(/period=7d/);
    await page.getByRole('heading', { name: 'Last 7d' }).waitFor();
    await page
      .getByRole('figure', { name: 'Messages by outcome' })
      .locator('canvas')
      .first()
      .waitFor();
    await screenshot(page, 'usage');
    await expectNamedControls(page);

    const later = await publish('/list-later', { 'Svc-Delay': '2h', 'Svc-Label': 'listed' });
    await go(page, '/messages?label=listed');
    const rows = page.getByRole('table', { name: 'Waiting messages' }).getByRole('row');
    await rows.filter({ hasText: later }).waitFor();
    expect(await rows.count()).toBe(2); // the header and the one message
    // Where it stands, in words: delayed, until its due time.
    expect(await rows.filter({ hasText: later }).innerText()).toMatch(/\tDelayed until \d{4}-/);
    await screenshot(page, 'messages');
    await expectNamedControls(page);
    // The State filter goes into the URL and the API's query.
    const filters = page.getByRole('form', { name: 'Message filters' });
    await filters.getByLabel('State').selectOption('ACTIVE');
    await filters.getByRole('button', { name: 'Apply filters' }).click();
    await page.waitForURL(/state=ACTIVE/);
    await page.getByText('No message is waiting for these filters').waitFor();
    await filters.getByLabel('State').selectOption('DELAYED');
    await filters.getByRole('button', { name: 'Apply filters' }).click();
    await page.waitForURL(/state=DELAYED/);
    await rows.filter({ hasText: later }).waitFor();

    // DLQ retry with overrides: method and label replaced on the new message.
    const failing = await startReceiver(() => ({ status: 500 }));
    try {
      const res = await t.api(`/v2/publish/${failing.url}/over`, {
        method: 'POST',
        headers: { 'Svc-Retries': '0', 'Svc-Label': 'before' },
        body: 'again',
      });
      const { messageId } = (await res.json()) as { messageId: string };
      let dlqId = '';
      await eventually(async () => {
        const list = (await (await t.api(`/v2/dlq?messageId=${messageId}`)).json()) as {
          messages: { dlqId: string }[];
        };
        dlqId = list.messages[0]?.dlqId ?? '';
        return dlqId !== '';
      }, 'the message reached the DLQ');
      await go(page, `/dlq/${dlqId}`);
      await page.getByText('Retry overrides').click();
      const overrides = page.getByRole('form', { name: 'Retry overrides' });
      await overrides.getByLabel('Method').selectOption('PUT');
      await overrides.getByLabel('Label').fill('after');
      await overrides.getByLabel('Retries').fill('0');
      await page.getByRole('button', { name: 'Retry', exact: true }).click();
      const link = page.getByRole('status').getByRole('link');
      await link.waitFor();
      const retried = await link.innerText();
      await page.getByText('The entry left the DLQ with its retry.').waitFor();
      expect(await page.getByText('Could not load the entry').count()).toBe(0);
      const [, second] = await failing.waitFor(2);
      expect(second?.method).toBe('PUT');
      expect(second?.body.toString()).toBe('again');
      const events = (await (await t.api(`/v2/events?messageId=${retried}`)).json()) as {
        events: { labels?: string[] }[];
      };
      expect(events.events[0]?.labels).toEqual(['after']);
      await expectNamedControls(page);
    } finally {
      await failing.close();
    }

    await go(page, '/publish');
    await page.getByLabel('Destination').fill(`${receiver.url}/from-the-form`);
    await screenshot(page, 'publish');
  });

  it('signs in with e-mail and API key: Accounts with plan, budget, token reset, a new account and usage', async () => {
    const admin = await createMgmtUser(t, true);
    const account = await createQueueAccount(admin, { type: 'paid' });
    const p = await browser.newPage();
    pages.push(p);
    const { page } = p;
    await page.goto(`${t.url}/console/`);
    await page.getByText('Management sign-in (e-mail and API key)').click();
    const form = page.getByRole('form', { name: 'Management sign-in' });
    await form.getByLabel('E-mail').fill(admin.email);
    await form.getByLabel('API key').fill('wrong');
    await form.getByRole('button', { name: 'Manage accounts' }).click();
    await form
      .getByRole('alert')
      .getByText(/Ferry answered 401/)
      .waitFor();
    await form.getByLabel('API key').fill(admin.apiKey);
    await form.getByRole('button', { name: 'Manage accounts' }).click();
    const nav = page.getByRole('navigation', { name: 'Console' });
    await nav.waitFor();
    expect(await nav.getByRole('link').allInnerTexts()).toEqual(['Accounts']);
    await page.waitForURL(/\/console\/accounts$/);

    const row = page.getByRole('row').filter({ hasText: account.id });
    await row.getByLabel(`Plan of ${account.id}`).selectOption('free');
    const mine = async () =>
      admin.json<{ type: string; budget: number }>(`/v2/queue/${account.id}`);
    await poll(async () => (await mine()).type).toBe('free');
    await row.getByLabel(`Budget of ${account.id} in dollars (0: none)`).fill('25');
    await row.getByRole('button', { name: `Save budget of ${account.id}` }).click();
    await poll(async () => (await mine()).budget).toBe(25);
    // The list never shows a token.
    expect(await page.locator('main').innerText()).not.toContain(account.token);
    await screenshot(page, 'accounts');
    await expectNamedControls(page);

    await row.getByRole('button', { name: `Reset token of ${account.id}` }).click();
    await row.getByRole('button', { name: 'Yes, reset' }).click();
    const shown = page.getByRole('status', { name: 'New token' }).locator('pre');
    await shown.waitFor();
    const fresh = (await shown.innerText()).trim();
    expect(fresh).not.toBe(account.token);
    expect((await withToken(t.url, account.token)('/v2/keys')).status).toBe(401);
    expect((await withToken(t.url, fresh)('/v2/keys')).status).toBe(200);

    // A new account from the form: its token is shown once and works.
    await page.getByText('New account', { exact: true }).click();
    const create = page.getByRole('form', { name: 'New account' });
    await create.getByLabel('Plan').selectOption('free');
    await create.getByRole('button', { name: 'Create account' }).click();
    await expect.poll(async () => (await shown.innerText()).trim()).not.toBe(fresh);
    const created = (await shown.innerText()).trim();
    expect((await withToken(t.url, created)('/v2/keys')).status).toBe(200);
    const accounts = await admin.json<{ id: string; type: string }[]>('/v2/queue');
    expect(accounts.filter((a) => a.type === 'free').length).toBeGreaterThanOrEqual(2);

    await row.getByRole('link', { name: account.id }).click();
    await page.getByRole('heading', { name: `Usage of account ${account.id}` }).waitFor();
    await page.getByRole('figure', { name: 'Daily billing' }).locator('canvas').first().waitFor();
    // Messaging pages are not there with management credentials.
    await go(page, '/logs');
    await page.waitForURL(/\/console\/accounts$/);
  });

  it('with --mgmt-port, the console on that port signs in with management credentials', async () => {
    const split = await startFerry({ args: ['--mgmt-port', '0'], engine: false });
    try {
      const main = (await (await fetch(`${split.url}/console/settings.json`)).json()) as object;
      expect(main).toMatchObject({ messaging: true, management: false });
      const mgmtUrl = split.ferry.mgmtUrl;
      const onMgmt = (await (await fetch(`${mgmtUrl}/console/settings.json`)).json()) as object;
      expect(onMgmt).toMatchObject({ messaging: false, management: true });

      const p = await browser.newPage();
      pages.push(p);
      const { page } = p;
      await page.goto(`${split.url}/console/`);
      await page.getByText('Management sign-in (e-mail and API key)').click();
      await page
        .getByRole('note')
        .getByText(/a port of its own/)
        .waitFor();

      const admin = await createMgmtUser(split, true);
      await page.goto(`${mgmtUrl}/console/`);
      await page.getByLabel('E-mail').waitFor();
      expect(await page.getByLabel('Token').count()).toBe(0);
      await page.getByLabel('E-mail').fill(admin.email);
      await page.getByLabel('API key').fill(admin.apiKey);
      await page.getByRole('button', { name: 'Manage accounts' }).click();
      await page
        .getByRole('table', { name: 'Accounts' })
        .or(page.getByText('No accounts yet'))
        .waitFor();
      const csp = (await fetch(`${mgmtUrl}/console/accounts`)).headers.get(
        'content-security-policy',
      );
      expect(csp).toContain("connect-src 'self'");
    } finally {
      await split.close();
    }
  });

  it('is usable at a phone’s width: no page-wide horizontal scrolling', async () => {
    const p = await browser.newPage();
    pages.push(p);
    const { page } = p;
    await page.setViewportSize({ width: 390, height: 844 });
    await signIn(page, t.url, t.token, '/logs');
    const nav = page.getByRole('navigation', { name: 'Console' });
    for (const name of ['Overview', 'Queues', 'Flow control', 'DLQ', 'Messages', 'Logs']) {
      // Through the navigation (scrolling sideways within itself), as a person would.
      await nav.getByRole('link', { name, exact: true }).click();
      await page.getByRole('heading', { level: 1, name, exact: true }).waitFor();
      const overflow = await page.evaluate<{ scroll: number; client: number }>(
        '({ scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth })',
      );
      expect(overflow.scroll, name).toBeLessThanOrEqual(overflow.client);
    }
  });

  it('every page of the navigation names its controls and fits a phone’s width', async () => {
    const p = await browser.newPage();
    pages.push(p);
    const { page } = p;
    await page.setViewportSize({ width: 390, height: 844 });
    await signIn(page, t.url, t.token, '/logs');
    const nav = page.getByRole('navigation', { name: 'Console' });
    const names = [
      'Overview',
      'Publish',
      'Logs',
      'Messages',
      'DLQ',
      'Schedules',
      'URL groups',
      'Queues',
      'Flow control',
      'Workflows',
      'Keys',
      'Usage',
    ];
    for (const name of names) {
      await nav.getByRole('link', { name, exact: true }).click();
      await page.getByRole('heading', { level: 1, name, exact: true }).waitFor();
      await expectNamedControls(page);
      const overflow = await page.evaluate<{ scroll: number; client: number }>(
        '({ scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth })',
      );
      expect(overflow.scroll, name).toBeLessThanOrEqual(overflow.client);
    }
  });

  it('is usable from the keyboard: Tab reaches the navigation, Enter follows a link', async () => {
    const p = await browser.newPage();
    pages.push(p);
    const { page } = p;
    await signIn(page, t.url, t.token, '/overview');
    await page.getByRole('heading', { level: 1, name: 'Overview', exact: true }).waitFor();
    const dlq = page
      .getByRole('navigation', { name: 'Console' })
      .getByRole('link', { name: 'DLQ', exact: true });
    const href = await dlq.getAttribute('href');
    const focusedHref = () =>
      page.evaluate<string | null>(
        '(document.activeElement instanceof HTMLAnchorElement && document.activeElement.closest("nav")) ? document.activeElement.getAttribute("href") : null',
      );
    let focused = false;
    for (let i = 0; i < 40 && !focused; i++) {
      await page.keyboard.press('Tab');
      focused = (await focusedHref()) === href;
    }
    expect(focused).toBe(true);
    await page.keyboard.press('Enter');
    await page.waitForURL(/\/console\/dlq/);
    await page.getByRole('heading', { level: 1, name: 'DLQ', exact: true }).waitFor();
  });

  it('sends no request to any host but Ferry', () => {
    const allowed = [new URL(t.url).origin];
    const all = pages.flatMap((p) => p.requests);
    expect(all.length).toBeGreaterThan(20);
    const elsewhere = all.filter(
      (url) =>
        !url.startsWith('data:') &&
        !url.startsWith('http://127.0.0.1:') &&
        !allowed.some((o) => url.startsWith(`${o}/`)),
    );
    expect(elsewhere).toEqual([]);
    // Refused calls the tests make on purpose (a wrong API key, a page for the other sign-in)
    // log "Failed to load resource"; nothing else may show (a CSP violation, a script error).
    expect(
      pages.flatMap((p) => p.errors).filter((e) => !e.startsWith('Failed to load resource')),
    ).toEqual([]);
  });
});
