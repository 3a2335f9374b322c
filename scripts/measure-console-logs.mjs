#!/usr/bin/env node
/**
 * Measures the console's Logs page on a large log (issue 15, quality bar: "the logs page with
 * 100,000 events in the store opens and pages in under 300 ms a page"). Seeds N events (default
 * 100,000: N/4 messages, each CREATED, ACTIVE, RETRY and DELIVERED, with a small JSON body on
 * CREATED) through the storage driver, starts the built server on them, signs in with headless
 * Chromium and times, in the browser:
 *   - open: a full load of /console/logs (HTML, bundle, API call) until the first row shows;
 *   - page: "Next page" until the next page's rows show (a client-side change: one API call).
 *
 *     npm run measure:console-logs [-- --events 100000 --pages 20]
 *
 * The data is written straight into the SQLite file between two starts (one process per SQLite
 * file): publishing 25,000 messages through a receiver would measure the engine, not the page.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { chromium } from 'playwright-core';
import { openSqliteDriver } from '../dist/storage/sqlite/sqlite-driver.js';
import { newMessageId } from '../dist/core/ids.js';

const { values } = parseArgs({
  options: {
    events: { type: 'string', default: '100000' },
    pages: { type: 'string', default: '20' },
    opens: { type: 'string', default: '5' },
    port: { type: 'string', default: '18432' },
  },
});
const total = Number(values.events);
const base = `http://127.0.0.1:${values.port}`;
const dir = mkdtempSync(join(tmpdir(), 'ferry-console-logs-'));

const start = () =>
  spawn(
    process.execPath,
    ['dist/cli/main.js', 'start', '--data-dir', dir, '--port', values.port, '--plan', 'paid'],
    { stdio: ['ignore', 'ignore', 'inherit'] },
  );
const stop = async (child) => {
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
};
async function waitHealthy() {
  for (let i = 0; i < 300; i++) {
    try {
      if ((await fetch(`${base}/health`)).ok) return;
    } catch {}
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('server did not start');
}
const stats = (ms) => {
  const sorted = [...ms].sort((a, b) => a - b);
  const at = (q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
  return {
    n: ms.length,
    median: Math.round(at(0.5)),
    p90: Math.round(at(0.9)),
    max: Math.round(sorted[sorted.length - 1]),
  };
};

let server = start();
let browser;
try {
  await waitHealthy();
  const { token, accountId } = JSON.parse(readFileSync(join(dir, 'credentials.json'), 'utf8'));
  await stop(server);

  const driver = openSqliteDriver({ path: join(dir, 'ferry.db') });
  const seedStart = Date.now();
  const STATES = ['CREATED', 'ACTIVE', 'RETRY', 'DELIVERED'];
  const perBatch = 5_000;
  for (let done = 0; done < total; done += perBatch) {
    const now = Date.now();
    const events = [];
    for (let i = done; i < Math.min(total, done + perBatch); i += STATES.length) {
      const messageId = newMessageId(now);
      STATES.forEach((state, s) =>
        events.push({
          messageId,
          accountId,
          url: `https://example.com/orders/${i}`,
          method: 'POST',
          callerIp: '127.0.0.1',
          labels: [i % 3 === 0 ? 'orders' : 'billing'],
          time: now + s,
          state,
          retried: state === 'DELIVERED' ? 1 : 0,
          maxRetries: 3,
          ...(state === 'CREATED'
            ? {
                header: { 'Content-Type': ['application/json'] },
                body: Buffer.from(JSON.stringify({ order: i, items: [1, 2, 3] })),
              }
            : {}),
          ...(state === 'DELIVERED' ? { responseStatus: 200 } : {}),
        }),
      );
    }
    await driver.executor.transaction((tx) => tx.eventInsertMany({ events }));
  }
  await driver.close();
  const seedMs = Date.now() - seedStart;

  server = start();
  await waitHealthy();
  browser = await chromium.launch({
    executablePath: process.env.FERRY_CHROMIUM ?? '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  });
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  await page.goto(`${base}/console/logs`);
  await page.getByLabel('Token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  const rows = page.getByRole('table', { name: 'Events' }).getByRole('row');
  await rows.nth(1).waitFor();

  // Times are taken in the page (performance.now(), from a MutationObserver that sees the first
  // row), so the test driver's own round trips are not in them.
  // Open: a full page load each time (the token stays in the tab's sessionStorage), from the
  // navigation's start until the first event row is in the document.
  await page.addInitScript(() => {
    const seen = () => document.querySelector('table[aria-label="Events"] tbody tr');
    new MutationObserver((_m, observer) => {
      if (seen()) {
        window.__firstRowAt = performance.now();
        observer.disconnect();
      }
    }).observe(document, { childList: true, subtree: true });
  });
  const opens = [];
  for (let i = 0; i < Number(values.opens); i++) {
    await page.goto(`${base}/console/logs`);
    await rows.nth(1).waitFor();
    opens.push(await page.evaluate(() => window.__firstRowAt));
  }

  // Paging: from the click on "Next page" until the first row is another event.
  const pages = [];
  for (let i = 0; i < Number(values.pages); i++) {
    pages.push(
      await page.evaluate(
        () =>
          new Promise((resolve) => {
            const first = () =>
              document.querySelector('table[aria-label="Events"] tbody tr')?.textContent;
            const before = first();
            const next = [...document.querySelectorAll('button')].find(
              (b) => b.textContent === 'Next page',
            );
            const t0 = performance.now();
            new MutationObserver((_m, observer) => {
              const now = first();
              if (now !== undefined && now !== before) {
                observer.disconnect();
                resolve(performance.now() - t0);
              }
            }).observe(document.body, { childList: true, subtree: true, characterData: true });
            next.click();
          }),
      ),
    );
  }
  const rowsShown = (await rows.count()) - 1;
  console.log(
    JSON.stringify(
      { events: total, seedMs, rowsPerPage: rowsShown, open: stats(opens), page: stats(pages) },
      null,
      2,
    ),
  );
} finally {
  await browser?.close();
  await stop(server);
  rmSync(dir, { recursive: true, force: true });
}
