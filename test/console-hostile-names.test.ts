/**
 * The console with hostile names, in a real browser (headless Chromium) against a real Ferry on
 * SQLite: names `.` and `..` stored before Ferry refused them (shown, their actions off, no
 * request to another route), names and URLs hundreds of characters long (the row's buttons stay
 * on screen), and per-row buttons named with their row. Hostile content (headers, bodies,
 * characters) is in console-hostile-data.test.ts.
 */
import { describe, expect, it } from 'vitest';
import type { Locator, Page } from 'playwright-core';
import {
  goTo,
  useConsoleSuite,
  openSignedIn,
  type ConsolePage,
  type TestBrowser,
} from './helpers/browser.js';
import type { TestFerry } from './helpers/ferry.js';
import type { Receiver } from './helpers/receiver.js';
import type { Schedule } from '../src/core/schedule.js';

let t: TestFerry;
let browser: TestBrowser;
let receiver: Receiver;
const pages: ConsolePage[] = [];

const open = (path: string, width?: number): Promise<Page> =>
  openSignedIn(browser, pages, t, path, width);

const go = (page: Page, path: string): Promise<void> => goTo(page, t.url, path);

/** The table row whose first cell is exactly `name`. */
const rowOf = (page: Page, table: string, name: string): Locator =>
  page
    .getByRole('table', { name: table })
    .getByRole('row')
    .filter({ has: page.getByRole('cell', { name, exact: true }).first() });

useConsoleSuite((suite) => {
  ({ browser, t, receiver } = suite);
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

describe('console with hostile names', () => {
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
    for (const queueName of ['row-q1', 'row-q2']) {
      const res = await t.api('/v2/queues', {
        method: 'POST',
        body: JSON.stringify({ queueName }),
      });
      expect(res.status).toBe(200);
    }

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

  it('raises no script error or CSP violation', () => {
    // Refused calls log "Failed to load resource"; nothing else may show.
    expect(
      pages.flatMap((p) => p.errors).filter((e) => !e.startsWith('Failed to load resource')),
    ).toEqual([]);
  });
});
