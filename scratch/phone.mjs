import { chromium } from 'playwright-core';
import { createFerry } from '/work/wt/console3/dist/app.js';
import { loadConfig } from '/work/wt/console3/dist/cli/config.js';
import { mkdtempSync } from 'node:fs';
const dataDir = mkdtempSync('/tmp/ferry-phone-');
const ferry = await createFerry({ config: loadConfig(['--port','0','--data-dir',dataDir,'--log-level','silent'],{}) });
await ferry.start();
const { createAccount } = await import('/work/wt/console3/dist/cli/credentials.js');
const creds = await createAccount({ executor: ferry.driver.executor, plan: 'paid', now: Date.now(), secrets: ferry.secrets });
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox','--disable-gpu'] });
const page = await browser.newPage({ viewport: { width: 390, height: 844 } });
await page.goto(ferry.url + '/console/logs');
await page.getByLabel('Token').fill(creds.token);
await page.getByRole('button', { name: 'Sign in' }).click();
await fetch(ferry.url + '/v2/queues', {method:'POST', headers:{authorization:'Bearer '+creds.token}, body: JSON.stringify({queueName:'console-q', parallelism: 2})});
for (const path of ['/logs','/overview','/queues','/flow-control','/dlq','/messages']) {
  await page.goto(ferry.url + '/console' + path);
  await page.getByRole('heading', { level: 1 }).waitFor();
  await page.waitForTimeout(500);
  const wide = await page.evaluate(`[...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > 392 && !e.closest('nav')).slice(0,8).map(e => e.tagName + '.' + e.className + ' ' + Math.round(e.getBoundingClientRect().right))`);
  console.log(path, await page.evaluate('document.documentElement.scrollWidth'), wide);
}
await browser.close(); await ferry.stop();
