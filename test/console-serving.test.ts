/**
 * How Ferry serves the console: on the main port at /console, deep links answer the page, hashed
 * assets are cached for a year, the page carries a strict CSP, and --no-console turns it off.
 * (The browser tests in console.test.ts cover what the console does.)
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/cli/config.js';
import { startFerry, type TestFerry } from './helpers/ferry.js';

describe('serving the console', () => {
  let t: TestFerry;
  beforeAll(async () => {
    t = await startFerry({ engine: false });
  });
  afterAll(() => t.close());

  it('answers the page at /console and at every deep link, with a strict CSP', async () => {
    for (const path of ['/console', '/console/', '/console/logs/msg_123?state=FAILED']) {
      const res = await fetch(`${t.url}${path}`);
      expect(res.status, path).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/html/);
      expect(res.headers.get('cache-control')).toBe('no-cache');
      const csp = res.headers.get('content-security-policy') ?? '';
      expect(csp).toContain("script-src 'self'");
      expect(csp).toContain("default-src 'none'");
      expect(csp).not.toContain('unsafe-inline');
      const html = await res.text();
      expect(html).toContain('<div id="app">');
      // No inline script: every <script> has a src on this origin.
      for (const tag of html.match(/<script[^>]*>[\s\S]*?<\/script>/g) ?? []) {
        expect(tag).toMatch(/src="\/console\/assets\/[^"]+"><\/script>$/);
      }
    }
  });

  it('serves hashed assets for a year and answers 404 for unknown ones', async () => {
    const html = await (await fetch(`${t.url}/console`)).text();
    const script = /src="(\/console\/assets\/[^"]+\.js)"/.exec(html)?.[1];
    expect(script).toBeDefined();
    const asset = await fetch(`${t.url}${script}`);
    expect(asset.status).toBe(200);
    expect(asset.headers.get('content-type')).toMatch(/javascript/);
    expect(asset.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    await asset.arrayBuffer(); // read it whole: an answer left unread holds its connection
    expect((await fetch(`${t.url}/console/assets/nope-123.js`)).status).toBe(404);
  });

  it('tells the console the header prefix and its sign-ins, and nothing secret', async () => {
    const res = await fetch(`${t.url}/console/settings.json`);
    expect(await res.json()).toEqual({ headerPrefix: 'Svc', messaging: true, management: true });
  });

  it('--no-console and FERRY_CONSOLE=false turn it off', async () => {
    const off = await startFerry({ engine: false, args: ['--no-console', '--mgmt-port', '0'] });
    try {
      expect((await fetch(`${off.url}/console`)).status).toBe(404);
      // Nor on the management port.
      expect((await fetch(`${off.ferry.mgmtUrl}/console`)).status).toBe(404);
      expect((await fetch(`${off.url}/health`)).status).toBe(200);
    } finally {
      await off.close();
    }
    expect(loadConfig([], {}).console).toBe(true);
    expect(loadConfig([], { FERRY_CONSOLE: 'false' }).console).toBe(false);
    expect(loadConfig(['--no-console'], { FERRY_CONSOLE: 'true' }).console).toBe(false);
    expect(() => loadConfig([], { FERRY_CONSOLE: 'maybe' })).toThrow(ConfigError);
  });
});
