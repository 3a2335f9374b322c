/**
 * Headless Chromium (Debian's package; `npm test` installs it when missing, see
 * scripts/ensure-chromium.mjs) driven by playwright-core, for the console's end-to-end tests.
 * One browser per test file, a fresh context (cookies, storage) per test.
 */
import { existsSync } from 'node:fs';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll } from 'vitest';
import { startFerry, type TestFerry } from './ferry.js';
import { startReceiver, type Receiver } from './receiver.js';

export const CHROMIUM = process.env.FERRY_CHROMIUM ?? '/usr/bin/chromium';

export interface TestBrowser {
  newPage(): Promise<ConsolePage>;
  close(): Promise<void>;
}

export interface ConsolePage {
  page: Page;
  context: BrowserContext;
  /** Every URL the page requested (documents, assets, API calls). */
  requests: string[];
  /** Uncaught page errors and console errors (CSP violations show here). */
  errors: string[];
}

export async function launchBrowser(): Promise<TestBrowser> {
  // Checked first: a launch that fails leaves Playwright's temporary folders behind.
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `no browser at ${CHROMIUM}: run \`npm test\` (it installs Chromium) or set FERRY_CHROMIUM`,
    );
  }
  // launch() gives the browser a fresh, temporary user-data dir of its own.
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--disable-quic',
      '--no-first-run',
    ],
  });
  return {
    async newPage() {
      const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
      const page = await context.newPage();
      page.setDefaultTimeout(10_000);
      const requests: string[] = [];
      const errors: string[] = [];
      page.on('request', (r) => requests.push(r.url()));
      page.on('pageerror', (e) => errors.push(e.message));
      page.on('console', (m) => {
        if (m.type() === 'error') errors.push(m.text());
      });
      return { page, context, requests, errors };
    },
    close: () => browser.close(),
  };
}

/** Opens the console at `path` (under /console) and signs in with `token`. */
export async function signIn(
  page: Page,
  baseUrl: string,
  token: string,
  path = '/logs',
): Promise<void> {
  await page.goto(`${baseUrl}/console${path}`);
  await page.getByLabel('Token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('navigation', { name: 'Console' }).waitFor();
}

/** Navigates inside the console (a client-side route change: the session stays). */
export async function goTo(page: Page, baseUrl: string, path: string): Promise<void> {
  await page.goto(`${baseUrl}/console${path}`);
  await page.getByRole('navigation', { name: 'Console' }).waitFor();
}

/**
 * A new page of `browser`, `width` px wide, signed in at `path`; added to `pages` for the test
 * to close.
 */
export async function openSignedIn(
  browser: TestBrowser,
  pages: ConsolePage[],
  ferry: { url: string; token: string },
  path: string,
  width = 1280,
): Promise<Page> {
  const p = await browser.newPage();
  pages.push(p);
  await p.page.setViewportSize({ width, height: 800 });
  await signIn(p.page, ferry.url, ferry.token, path);
  return p.page;
}

/**
 * Saves a screenshot to `docs/console-<name>.png` when FERRY_SCREENSHOTS is set
 * (`npm run screenshots`), so the pictures in docs/console.md come from these tests.
 */
export async function screenshot(page: Page, name: string): Promise<void> {
  if (!process.env.FERRY_SCREENSHOTS) return;
  const path = new URL(`../../docs/console-${name}.png`, import.meta.url);
  await page.screenshot({ path: path.pathname, fullPage: false });
}

/** Polls `check` until it holds, with a deadline (waiting on recorded state, not on time). */
export async function eventually(check: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`timed out waiting until ${what}`);
}

/** What a console test file runs against, for all of its tests. */
export interface ConsoleSuite {
  browser: TestBrowser;
  t: TestFerry;
  receiver: Receiver;
}

/**
 * Starts a browser, a Ferry and a receiver before a file's tests and stops them after; `started`
 * hands them to the file's own variables. The browser comes first: without Chromium the file
 * fails before a Ferry (and its data directory) exists.
 */
export function useConsoleSuite(started: (suite: ConsoleSuite) => void): void {
  let suite: Partial<ConsoleSuite> = {};
  beforeAll(async () => {
    const browser = await launchBrowser();
    suite = { browser };
    const [t, receiver] = await Promise.all([startFerry(), startReceiver()]);
    suite = { browser, t, receiver };
    started({ browser, t, receiver });
  });
  afterAll(async () => {
    await Promise.all([suite.browser?.close(), suite.receiver?.close()]);
    await suite.t?.close();
  });
}
