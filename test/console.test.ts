/**
 * The console in a real browser (headless Chromium) against a real Ferry on SQLite with real
 * receivers: sign in and out, Logs with a message's timeline, DLQ retry (one, selected) and
 * delete, schedules, URL-group headers and deletion, key rotation, planted XSS payloads, workflow
 * runs (resume, restart, failure callback, a step retrying, a call in flight, cancel), and no
 * request to any host but Ferry's.
 */
import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  eventually,
  useConsoleSuite,
  screenshot,
  signIn,
  type ConsolePage,
  type TestBrowser,
} from './helpers/browser.js';
import type { TestFerry } from './helpers/ferry.js';
import { formatTime } from '../console/src/format.js';
import { formatInZone } from '../console/src/cron-preview.js';
import { startReceiver, type Receiver } from './helpers/receiver.js';

let t: TestFerry;
let browser: TestBrowser;
let receiver: Receiver;
const pages: ConsolePage[] = [];

/** Waits until the log holds `state` for the message (the engine writes it after delivery). */
function waitForState(messageId: string, state: string): Promise<void> {
  return eventually(async () => {
    const res = await t.api(`/v2/events?messageId=${messageId}&state=${state}`);
    return ((await res.json()) as { events: unknown[] }).events.length > 0;
  }, `${messageId} reached ${state}`);
}

async function open(path: string): Promise<ConsolePage> {
  const p = await browser.newPage();
  pages.push(p);
  await signIn(p.page, t.url, t.token, path);
  return p;
}

async function publish(path: string, init: RequestInit): Promise<string> {
  const res = await t.api(`/v2/publish/${receiver.url}${path}`, { method: 'POST', ...init });
  expect(res.status).toBe(200);
  return ((await res.json()) as { messageId: string }).messageId;
}

/**
 * Starts a workflow run as the SDK's trigger does (Svc- protocol): its first step is a message to
 * `<endpoint>/wf`. Returns that message's id.
 */
async function startRun(
  endpoint: string,
  runId: string,
  headers: Record<string, string>,
): Promise<string> {
  const res = await t.api(`/v2/publish/${endpoint}/wf`, {
    method: 'POST',
    headers: { 'Svc-Workflow-RunId': runId, 'Svc-Workflow-Init': 'true', ...headers },
    body: 'payload',
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { messageId: string }).messageId;
}

/**
 * A one-step workflow endpoint speaking the Svc- protocol: it answers 500 until `fix()`, then
 * ends the run with `result`.
 */
async function fixableWorkflow(result: string): Promise<Receiver & { fix(): void }> {
  let fixed = false;
  const endpoint = await startReceiver(async (req) => {
    if (!fixed) return { status: 500, body: 'step broke' };
    const runId = req.headers['svc-workflow-runid'] as string;
    await t.api(`/v2/workflows/runs/${runId}?cancel=false`, {
      method: 'DELETE',
      body: JSON.stringify(result),
    });
    return { status: 200 };
  });
  return Object.assign(endpoint, { fix: () => (fixed = true) });
}

useConsoleSuite((suite) => {
  ({ browser, t, receiver } = suite);
});

describe('console', () => {
  it('signs in with a token kept for the session only, and signing out forgets it', async () => {
    const p = await browser.newPage();
    pages.push(p);
    const { page } = p;
    await page.goto(`${t.url}/console/schedules`);
    await page.getByLabel('Token').fill('not-a-token');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page
      .getByRole('alert')
      .getByText(/Could not sign in\. Ferry answered 401/)
      .waitFor();

    await page.getByLabel('Token').fill(t.token);
    await page.getByRole('button', { name: 'Sign in' }).click();
    const nav = page.getByRole('navigation', { name: 'Console' });
    await nav.waitFor();
    for (const name of [
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
    ]) {
      expect(await nav.getByRole('link', { name, exact: true }).count(), name).toBe(1);
    }
    // The deep link survived the sign-in; the token is in sessionStorage only, not in the URL.
    expect(new URL(page.url()).pathname).toBe('/console/schedules');
    expect(page.url()).not.toContain(t.token);
    // Evaluated in the page (as text: the tests' TypeScript has no DOM types).
    const stored = await page.evaluate<{ session: string; local: number; cookies: string }>(
      '({ session: JSON.stringify(Object.entries(sessionStorage)), local: localStorage.length, cookies: document.cookie })',
    );
    expect(stored.session).toContain(t.token);
    expect(stored.local).toBe(0);
    expect(stored.cookies).toBe('');

    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('Token').waitFor();
    expect(await page.evaluate<number>('sessionStorage.length')).toBe(0);
  });

  it('shows a delivered message in Logs, with its timeline, filters in the URL', async () => {
    const messageId = await publish('/logs-ok', {
      headers: { 'content-type': 'application/json', 'Svc-Label': 'orders' },
      body: '{"order":42}',
    });
    await waitForState(messageId, 'DELIVERED');

    const { page } = await open('/logs');
    const row = page
      .getByRole('row')
      .filter({ hasText: messageId })
      .filter({ hasText: 'DELIVERED' });
    await row.waitFor();

    // Filters go into the URL; a reload keeps them; back returns to the unfiltered list.
    await page.getByLabel('State').selectOption('DELIVERED');
    await page.getByLabel('Label').fill('orders');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.waitForURL(/state=DELIVERED/);
    expect(page.url()).toContain('label=orders');
    await page.reload();
    await row.waitFor();
    await screenshot(page, 'logs');
    expect(await page.getByLabel('Label').inputValue()).toBe('orders');

    await page.getByRole('link', { name: messageId }).first().click();
    await page.waitForURL(new RegExp(`/console/logs/${messageId}$`));
    const timeline = page.getByRole('list', { name: 'Timeline' });
    await timeline.waitFor();
    expect(await timeline.getByRole('listitem').allInnerTexts()).toEqual([
      expect.stringContaining('CREATED'),
      expect.stringContaining('ACTIVE'),
      expect.stringContaining('DELIVERED'),
    ]);
    expect(await page.getByLabel('Request body').innerText()).toContain('"order": 42');
    await page.getByText('HTTP 200 at').waitFor();
    await screenshot(page, 'message');

    await page.goBack();
    await page.waitForURL(/\/console\/logs\?/);
    await page.goBack();
    await page.waitForURL(/\/console\/logs$/);
  });

  it('retries a DLQ entry and the retry is delivered', async () => {
    let fail = true;
    const failing = await startReceiver(() =>
      fail ? { status: 500, body: 'down' } : { status: 200 },
    );
    try {
      // Delayed 2 s, so that it fails (enters the DLQ) seconds after it was published.
      const res = await t.api(`/v2/publish/${failing.url}/dlq`, {
        method: 'POST',
        headers: { 'Svc-Retries': '0', 'Svc-Delay': '2s' },
        body: 'to the dlq',
      });
      const { messageId } = (await res.json()) as { messageId: string };
      await waitForState(messageId, 'FAILED');
      const [entry] = (
        (await (await t.api('/v2/dlq')).json()) as {
          messages: { createdAt: number; dlqCreatedAt: number }[];
        }
      ).messages;
      const [created, failed] = [formatTime(entry?.createdAt), formatTime(entry?.dlqCreatedAt)];
      expect(failed).not.toBe(created);

      const { page } = await open('/dlq');
      const row = page.getByRole('row').filter({ hasText: '500' });
      await row.waitFor();
      // "Failed at" is when it entered the DLQ, not when it was published.
      expect(await row.getByRole('cell').nth(1).innerText()).toBe(failed);
      await row.getByRole('link').click();
      await page.getByText('HTTP 500').waitFor();
      const facts = page.locator('dl.facts');
      expect(
        await facts.getByText('Failed at').locator('xpath=following-sibling::dd[1]').innerText(),
      ).toBe(failed);
      expect(
        await facts.getByText('Created').locator('xpath=following-sibling::dd[1]').innerText(),
      ).toBe(created);
      expect(await page.getByLabel('Response body').innerText()).toBe('down');
      await screenshot(page, 'dlq-entry');

      fail = false;
      await page.getByRole('button', { name: 'Retry', exact: true }).click();
      const link = page.getByRole('status').getByRole('link');
      await link.waitFor();
      const retriedId = await link.innerText();
      await failing.waitFor(2);
      await waitForState(retriedId, 'DELIVERED');
      await link.click();
      await page.getByRole('list', { name: 'Timeline' }).getByText('DELIVERED').waitFor();
      const dlq = (await (await t.api('/v2/dlq')).json()) as { messages: unknown[] };
      expect(dlq.messages).toHaveLength(0);
    } finally {
      await failing.close();
    }
  });

  it('retries two selected DLQ entries and deletes a third', async () => {
    let fail = true;
    const failing = await startReceiver(() =>
      fail ? { status: 500, body: 'down' } : { status: 200 },
    );
    try {
      const ids: string[] = [];
      for (const n of [1, 2, 3]) {
        const res = await t.api(`/v2/publish/${failing.url}/selected-${n}`, {
          method: 'POST',
          headers: { 'Svc-Retries': '0' },
          body: `entry ${n}`,
        });
        ids.push(((await res.json()) as { messageId: string }).messageId);
      }
      for (const id of ids) await waitForState(id, 'FAILED');
      const dlq = (await (await t.api('/v2/dlq')).json()) as {
        messages: { dlqId: string; messageId: string }[];
      };
      const dlqIdOf = (messageId: string): string =>
        dlq.messages.find((m) => m.messageId === messageId)?.dlqId ?? '';
      const [one, two, three] = ids.map(dlqIdOf) as [string, string, string];

      const { page } = await open('/dlq');
      const table = page.getByRole('table', { name: 'DLQ entries' });
      await table.getByRole('link', { name: three }).waitFor();
      fail = false;
      await page.getByRole('checkbox', { name: `Select ${one}` }).check();
      await page.getByRole('checkbox', { name: `Select ${two}` }).check();
      await page.getByRole('button', { name: 'Retry selected' }).click();
      // The answer links each retry's new message; both are delivered.
      const links = page.getByRole('status').getByRole('link');
      await expect.poll(() => links.count()).toBe(2);
      for (const retried of await links.allInnerTexts()) await waitForState(retried, 'DELIVERED');

      await page.getByRole('checkbox', { name: `Select ${three}` }).check();
      await page.getByRole('button', { name: 'Delete selected' }).click();
      await page.getByRole('button', { name: 'Yes, delete' }).click();
      await page.getByText('Deleted 1.').waitFor();
      await table.getByRole('link', { name: three }).waitFor({ state: 'detached' });
      const left = (await (await t.api('/v2/dlq')).json()) as { messages: unknown[] };
      expect(left.messages).toEqual([]);
      // A deleted entry is not retried: only the two selected ones reached the receiver again.
      expect(failing.requests.map((r) => r.path).sort()).toEqual([
        '/selected-1',
        '/selected-1',
        '/selected-2',
        '/selected-2',
        '/selected-3',
      ]);
    } finally {
      await failing.close();
    }
  });

  it('rotates the signing keys, and deletes a URL group', async () => {
    const before = (await (await t.api('/v2/keys')).json()) as { current: string; next: string };
    const { page } = await open('/keys');
    await page.getByText(before.next).waitFor();
    await page.getByRole('button', { name: 'Rotate keys' }).click();
    await page.getByRole('button', { name: 'Yes, rotate' }).click();
    await page.getByText('Keys rotated.').waitFor();
    const after = (await (await t.api('/v2/keys')).json()) as { current: string; next: string };
    // The next key became current, and a new next key was made; the page shows the pair.
    expect(after.current).toBe(before.next);
    expect(after.next).not.toBe(before.next);
    expect(await page.locator('dl.facts').innerText()).toContain(after.next);
    // Deliveries are signed with the new current key (t.api signs nothing: check a real one).
    const id = await publish('/after-rotation', { body: 'signed' });
    await waitForState(id, 'DELIVERED');
    const signed = receiver.requests.find((r) => r.path === '/after-rotation');
    const jwt = String(signed?.headers['svc-signature'] ?? '');
    const [head, claims, mac] = jwt.split('.');
    expect(mac).toBe(
      createHmac('sha256', after.current).update(`${head}.${claims}`).digest('base64url'),
    );

    const add = await t.api('/v2/topics/to-delete/endpoints', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ endpoints: [{ url: `${receiver.url}/gone`, name: 'gone' }] }),
    });
    expect(add.status).toBe(200);
    await page.goto(`${t.url}/console/url-groups/to-delete`);
    await page
      .getByRole('table', { name: 'Endpoints' })
      .getByText('gone', { exact: true })
      .waitFor();
    await page.getByRole('button', { name: 'Delete group' }).click();
    await page.getByRole('button', { name: 'Yes, delete the group' }).click();
    await page.waitForURL(/\/console\/url-groups$/);
    expect((await t.api('/v2/topics/to-delete')).status).toBe(404);
  });

  it('creates, pauses, resumes and deletes a schedule, with the next five fire times', async () => {
    const { page } = await open('/schedules');
    const cron = page.getByLabel('Cron', { exact: true });
    await cron.fill('0 9 * * 1');
    await page.getByLabel('Time zone').selectOption('Europe/Berlin');
    const times = page.getByRole('list', { name: 'Next fire times' }).getByRole('listitem');
    await expect.poll(() => times.allInnerTexts()).toHaveLength(5);
    for (const text of await times.allInnerTexts())
      expect(text).toMatch(/^Mon \d{4}-\d\d-\d\d 09:00$/);

    await cron.fill('61 * * * *');
    await page.getByText(/Invalid cron expression/).waitFor();
    expect(await page.getByRole('button', { name: 'Create schedule' }).isDisabled()).toBe(true);
    await cron.fill('*/10 * * * *');

    await page.getByLabel('Destination').fill(`${receiver.url}/tick`);
    await page.getByRole('button', { name: 'Create schedule' }).click();
    const created = page.getByText(/^Created schedule (\S+)\.$/);
    await created.waitFor();
    const scheduleId = /Created schedule (\S+)\./.exec(await created.innerText())?.[1] ?? '';
    const row = page.getByRole('row').filter({ hasText: scheduleId });
    await row.getByText('Active').waitFor();
    await screenshot(page, 'schedules');
    const stored = (await (await t.api(`/v2/schedules/${scheduleId}`)).json()) as {
      cron: string;
      nextScheduleTime: number;
    };
    expect(stored.cron).toBe('CRON_TZ=Europe/Berlin */10 * * * *');
    // The next fire time in the browser's zone and, under it, in the schedule's own.
    const next = new Date(stored.nextScheduleTime);
    const browserZone = await page.evaluate(() => Intl.DateTimeFormat().resolvedOptions().timeZone);
    expect(await row.getByRole('cell').nth(5).innerText()).toBe(
      browserZone === 'Europe/Berlin'
        ? formatTime(next.getTime())
        : `${formatTime(next.getTime())}\n${formatInZone(next, 'Europe/Berlin')} Europe/Berlin`,
    );

    // The destination's own query is the destination's, not settings for Ferry.
    const withQuery = `${receiver.url}/tick?svc-retries=7&keep=1`;
    await page.getByLabel('Destination').fill(withQuery);
    await page.getByRole('button', { name: 'Create schedule' }).click();
    const second = page.getByText(new RegExp(`^Created schedule (?!${scheduleId})(\\S+)\\.$`));
    await second.waitFor();
    const secondId = /Created schedule (\S+)\./.exec(await second.innerText())?.[1] ?? '';
    const kept = (await (await t.api(`/v2/schedules/${secondId}`)).json()) as {
      destination: string;
      retries: number;
    };
    expect(kept.destination).toBe(withQuery);
    expect(kept.retries).not.toBe(7);
    expect((await t.api(`/v2/schedules/${secondId}`, { method: 'DELETE' })).status).toBe(200);

    await row.getByRole('button', { name: `Pause schedule ${scheduleId}` }).click();
    await row.getByText('Paused').waitFor();
    await row.getByRole('button', { name: `Resume schedule ${scheduleId}` }).click();
    await row.getByText('Active').waitFor();
    await row.getByRole('button', { name: `Delete schedule ${scheduleId}` }).click();
    await row.getByRole('button', { name: 'Yes, delete' }).click();
    await row.waitFor({ state: 'detached' });
    expect((await t.api(`/v2/schedules/${scheduleId}`)).status).toBe(404);
  });

  it("edits a URL group's default headers", async () => {
    const add = await t.api('/v2/topics/billing/endpoints', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ endpoints: [{ url: `${receiver.url}/a`, name: 'a' }] }),
    });
    expect(add.status).toBe(200);
    const { page } = await open('/url-groups');
    await page.getByRole('link', { name: 'billing' }).click();
    await page.getByRole('table', { name: 'Endpoints' }).getByText('a', { exact: true }).waitFor();
    await page.getByLabel('Header 1 name').fill('Svc-Retries');
    await page.getByLabel('Header 1 value').fill('2');
    await page.getByRole('button', { name: 'Add header' }).click();
    await page.getByLabel('Header 2 name').fill('X-Team');
    await page.getByLabel('Header 2 value').fill('payments');
    await page.getByRole('button', { name: 'Save headers' }).click();
    await page.getByText('Default headers saved.').waitFor();
    await screenshot(page, 'url-group');
    const group = (await (await t.api('/v2/topics/billing')).json()) as {
      headers: Record<string, string[]>;
    };
    expect(group.headers).toEqual({ 'Svc-Retries': ['2'], 'X-Team': ['payments'] });
  });

  it('shows planted markup in a body, a header and a label as text, and runs none of it', async () => {
    const payload = (n: number): string =>
      `<img src=x onerror="window.__xss=${n}"><script>window.__xss=${n}</script>`;
    const messageId = await publish('/xss', {
      headers: {
        'content-type': 'text/html',
        'Svc-Label': `<img src=x onerror=window.__xss=3>`,
        'Svc-Forward-X-Evil': payload(2),
      },
      body: payload(1),
    });
    await waitForState(messageId, 'DELIVERED');

    const p = await open(`/logs?messageId=${messageId}`);
    const { page } = p;
    await page
      .getByRole('row')
      .filter({ hasText: 'DELIVERED' })
      .getByText('<img src=x onerror=window.__xss=3>')
      .waitFor();
    await page.getByRole('link', { name: messageId }).first().click();
    await page.getByLabel('Request body').getByText(payload(1)).waitFor();
    await page.getByRole('table', { name: 'Request headers' }).getByText(payload(2)).waitFor();
    expect(await page.locator('img').count()).toBe(0);
    expect(await page.evaluate<unknown>('window.__xss')).toBeUndefined();
    expect(p.errors.filter((e) => /Content Security Policy/i.test(e))).toEqual([]);
  });

  it('resumes a failed workflow run from the workflow DLQ', async () => {
    const workflow = await fixableWorkflow('all done');
    try {
      await startRun(workflow.url, 'wfr_console-1', {
        'Svc-Retries': '0',
        'Svc-Failure-Callback': `${receiver.url}/wf-failed`,
      });
      await eventually(async () => {
        const dlq = (await (await t.api('/v2/workflows/dlq')).json()) as { messages: unknown[] };
        return dlq.messages.length === 1;
      }, 'the run reached the workflow DLQ');

      const { page } = await open('/workflows?view=dlq');
      const row = page.getByRole('row').filter({ hasText: 'wfr_console-1' });
      await row.getByText('500').waitFor();
      const [failedRun] = (
        (await (await t.api('/v2/workflows/dlq')).json()) as {
          messages: { dlqCreatedAt: number }[];
        }
      ).messages;
      expect(await row.getByRole('cell').nth(1).innerText()).toBe(
        formatTime(failedRun?.dlqCreatedAt),
      );
      await screenshot(page, 'workflow-dlq');
      workflow.fix();
      await row.getByRole('button', { name: 'Resume wfr_console-1' }).click();
      const notice = page.getByText(/^Resumed (\S+)\.$/);
      await notice.waitFor();
      const resumedId = /^Resumed (\S+)\.$/.exec(await notice.innerText())?.[1] ?? '';
      await page.getByText('No failed runs in the workflow DLQ.').waitFor();

      await eventually(async () => {
        const logs = (await (
          await t.api(`/v2/workflows/logs?workflowRunId=${resumedId}`)
        ).json()) as { runs: { workflowState: string }[] };
        return logs.runs[0]?.workflowState === 'RUN_SUCCESS';
      }, 'the resumed run succeeded');
      await page.getByRole('link', { name: 'Runs', exact: true }).click();
      await page.getByRole('link', { name: resumedId }).click();
      await page.getByText('RUN_SUCCESS').first().waitFor();
      expect(await page.locator('pre.body').innerText()).toContain('all done');
    } finally {
      await workflow.close();
    }
  });

  it('restarts selected runs of the workflow DLQ and re-runs a failure callback', async () => {
    // Failure callbacks land on a receiver of their own, so this test counts only its own.
    const failures = await startReceiver();
    const workflow = await fixableWorkflow('restarted fine');
    const runs = ['wfr_console-r1', 'wfr_console-r2', 'wfr_console-r3'];
    try {
      for (const runId of runs) {
        await startRun(workflow.url, runId, {
          'Svc-Retries': '0',
          'Svc-Failure-Callback': `${failures.url}/failed`,
        });
      }
      await failures.waitFor(runs.length);
      const { page } = await open('/workflows?view=dlq');
      const table = page.getByRole('table', { name: 'Workflow DLQ' });
      for (const runId of runs) await table.getByRole('link', { name: runId }).waitFor();

      // The failure function again, for one run: its callback is called a second time.
      await page
        .getByRole('button', { name: 'Re-run the failure callback of wfr_console-r3' })
        .click();
      await page.getByText('Failure callback sent again for 1.').waitFor();
      await failures.waitFor(runs.length + 1);
      const again = failures.requests.at(-1);
      expect(JSON.parse(again?.body.toString() ?? '{}')).toMatchObject({
        workflowRunId: 'wfr_console-r3',
      });

      workflow.fix();
      await page.getByRole('checkbox', { name: 'Select wfr_console-r1' }).check();
      await page.getByRole('checkbox', { name: 'Select wfr_console-r2' }).check();
      await page.getByRole('button', { name: 'Restart selected' }).click();
      const notice = page.getByText(/^Restarted (\S+), (\S+)\.$/);
      await notice.waitFor();
      const restarted = /^Restarted (\S+), (\S+)\.$/.exec(await notice.innerText())?.slice(1) ?? [];
      expect(restarted).toHaveLength(2);
      // Only the unselected run is left in the DLQ; the two restarted runs complete.
      await table.getByRole('link', { name: 'wfr_console-r1' }).waitFor({ state: 'detached' });
      expect(await table.getByRole('link', { name: 'wfr_console-r3' }).count()).toBe(1);
      for (const runId of restarted) {
        await eventually(async () => {
          const logs = (await (
            await t.api(`/v2/workflows/logs?workflowRunId=${runId}`)
          ).json()) as { runs: { workflowState: string }[] };
          return logs.runs[0]?.workflowState === 'RUN_SUCCESS';
        }, `restarted run ${runId} succeeded`);
      }
    } finally {
      await workflow.close();
      await failures.close();
      await t.api('/v2/workflows/dlq?workflowRunId=wfr_console-r3', { method: 'DELETE' });
    }
  });

  it('shows the step a running run is retrying, with its error, apart from failed steps, and a call in flight as pending', async () => {
    // The first step fails; its retry is a minute away, so the run stays at it.
    const workflow = await startReceiver(() => ({ status: 503, body: 'step unavailable' }));
    // A third party that does not answer: a `context.call` of the run stays on its way.
    const third = await startReceiver(() => ({ hang: true }));
    try {
      await startRun(workflow.url, 'wfr_console-retrying', {
        'Svc-Retries': '2',
        'Svc-Retry-Delay': '60000',
      });
      await eventually(async () => {
        const logs = (await (
          await t.api('/v2/workflows/logs?workflowRunId=wfr_console-retrying')
        ).json()) as { runs: { steps: { type: string; steps: { state: string }[] }[] }[] };
        const next = logs.runs[0]?.steps.find((g) => g.type === 'next');
        return next?.steps[0]?.state === 'STEP_RETRY';
      }, 'the run shows its step retrying');

      // The call as the SDK publishes it: to the third party, its step named for its callback.
      const call = await t.api(`/v2/publish/${third.url}/charge`, {
        method: 'POST',
        headers: {
          'Svc-Workflow-RunId': 'wfr_console-retrying',
          'Svc-Workflow-CallType': 'toCallback',
          'Svc-Method': 'PUT',
          'Svc-Callback': `${workflow.url}/wf`,
          'Svc-Callback-Forward-Svc-Workflow-StepId': '1',
          'Svc-Callback-Forward-Svc-Workflow-StepName': 'charge',
          'Svc-Callback-Forward-Svc-Workflow-StepType': 'Call',
          'Svc-Callback-Forward-Svc-Workflow-Concurrent': '1',
        },
        body: '{"amount":5}',
      });
      expect(call.status).toBe(200);
      await third.waitFor(1);

      const { page } = await open('/workflows/runs/wfr_console-retrying');
      const steps = page.getByRole('list', { name: 'Steps' });
      const next = steps.getByRole('listitem').filter({ hasText: 'next step' });
      await next.getByText('STEP_RETRY').waitFor();
      expect(await next.innerText()).toContain('503');
      expect(await next.getAttribute('class')).toContain('state-error');
      expect(await steps.getByText('failed step').count()).toBe(0);
      // The call on its way is pending, named as the SDK named its step: not a failed step.
      const calling = steps.getByRole('listitem').filter({ hasText: 'charge' });
      await calling.getByText(`calling PUT ${third.url}/charge`).waitFor();
      expect(await calling.innerText()).toContain('STEP_PROGRESS');
      expect(await calling.getAttribute('class')).toContain('state-active');
      await screenshot(page, 'workflow-run-retrying');
    } finally {
      await third.close();
      await workflow.close();
      await t.api('/v2/workflows/runs/wfr_console-retrying', { method: 'DELETE' });
    }
  });

  it('cancels a running run from its page: RUN_CANCELED, and its waiting step is cancelled', async () => {
    // The run's first step fails; its retry is a minute away, so the run waits at it.
    const workflow = await startReceiver(() => ({ status: 503, body: 'step unavailable' }));
    try {
      const messageId = await startRun(workflow.url, 'wfr_console-cancel', {
        'Svc-Retries': '2',
        'Svc-Retry-Delay': '60000',
      });
      await waitForState(messageId, 'RETRY');

      const { page } = await open('/workflows/runs/wfr_console-cancel');
      const steps = page.getByRole('list', { name: 'Steps' });
      await steps.getByRole('listitem').filter({ hasText: 'next step' }).waitFor();
      await page.getByRole('button', { name: 'Cancel run' }).click();
      await page.getByRole('button', { name: 'Yes, cancel the run' }).click();
      await page.getByText('Run cancelled.').waitFor();
      await page.getByText('RUN_CANCELED').first().waitFor();
      await steps
        .getByRole('listitem')
        .filter({ hasText: 'next step' })
        .waitFor({ state: 'detached' });
      // Cancelled, not completed: the API agrees, and the retry waits no more.
      const logs = (await (
        await t.api('/v2/workflows/logs?workflowRunId=wfr_console-cancel')
      ).json()) as { runs: { workflowState: string }[] };
      expect(logs.runs[0]?.workflowState).toBe('RUN_CANCELED');
      expect((await t.api(`/v2/messages/${messageId}`)).status).toBe(404);
      await waitForState(messageId, 'CANCELLED');
    } finally {
      await workflow.close();
    }
  });

  it('publishes from the form, links the answer to Logs, and shows the API error text', async () => {
    const target = await startReceiver();
    try {
      const { page } = await open('/publish');
      // A bad setting: the API's own error text is shown.
      await page.getByLabel('Destination').fill(`${target.url}/published?keep=1`);
      await page.getByLabel('Retries').fill('many');
      await page.getByRole('button', { name: 'Publish', exact: true }).click();
      await page
        .getByRole('alert')
        .getByText(/Ferry answered 400: .*retries/i)
        .waitFor();

      await page.getByLabel('Retries').fill('1');
      await page.getByLabel('Method').selectOption('PUT');
      await page.getByLabel('Content type').fill('application/json');
      await page.getByRole('button', { name: 'Add header' }).click();
      await page.getByLabel('Header 1 name').fill('X-Console');
      await page.getByLabel('Header 1 value').fill('from the form');
      await page.getByLabel('Flow-control key').fill('console-key');
      await page.getByLabel('Parallelism').fill('2');
      await page.getByLabel('Body').fill('{"hello":"console"}');
      await page.getByRole('button', { name: 'Publish', exact: true }).click();
      const link = page.getByRole('status').getByRole('link');
      await link.waitFor();
      const messageId = await link.innerText();

      const [delivered] = await target.waitFor(1);
      expect(delivered?.method).toBe('PUT');
      expect(delivered?.path).toBe('/published?keep=1');
      expect(delivered?.headers['x-console']).toBe('from the form');
      expect(delivered?.headers['content-type']).toBe('application/json');
      expect(delivered?.body.toString()).toBe('{"hello":"console"}');
      await waitForState(messageId, 'DELIVERED');
      await link.click();
      await page.waitForURL(new RegExp(`/console/logs/${messageId}$`));
      await page.getByRole('list', { name: 'Timeline' }).getByText('DELIVERED').waitFor();
    } finally {
      await target.close();
    }
  });

  it('shows why a message waits for a retry, and when the retry is scheduled', async () => {
    const failing = await startReceiver(() => ({ status: 503, body: 'busy' }));
    try {
      const res = await t.api(`/v2/publish/${failing.url}/retrying`, {
        method: 'POST',
        headers: { 'Svc-Retries': '3', 'Svc-Retry-Delay': '3600000' },
        body: 'again later',
      });
      const { messageId } = (await res.json()) as { messageId: string };
      await waitForState(messageId, 'RETRY');
      const [retry] = (
        (await (await t.api(`/v2/events?messageId=${messageId}&state=RETRY`)).json()) as {
          events: { nextDeliveryTime: number }[];
        }
      ).events;

      const { page } = await open(`/messages?messageId=${messageId}`);
      const facts = page.getByRole('definition');
      const failure = page.locator('dl[aria-label="Last failed attempt"]');
      await failure.waitFor();
      expect(await failure.innerText()).toContain('HTTP 503');
      expect(await facts.filter({ hasText: ' of 3' }).innerText()).toBe('1 of 3');
      const scheduled = failure.locator('dt', { hasText: 'Retry scheduled for' }).locator('+ dd');
      // The console's local time, as the browser formats it (format.ts).
      const local = await page.evaluate((ms) => {
        const d = new Date(ms);
        const p = (n: number) => String(n).padStart(2, '0');
        return (
          `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ` +
          `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`
        );
      }, retry?.nextDeliveryTime ?? 0);
      expect(await scheduled.innerText()).toBe(local);
      // Where it stands: the storage's due time, here the one the retry was scheduled for.
      const state = page.locator('dl[aria-label="State"] dd');
      expect(await state.innerText()).toBe(`Delayed until ${local}`);
      expect((await t.api(`/v2/messages/${messageId}`, { method: 'DELETE' })).status).toBe(200);
    } finally {
      await failing.close();
    }
  });

  it('looks up a delayed message and cancels it, then cancels by filter', async () => {
    const delayed = (label: string): Promise<string> =>
      publish('/later', { headers: { 'Svc-Delay': '1h', 'Svc-Label': label }, body: 'later' });
    const one = await delayed('console-one');
    const [bulkA, bulkB, kept] = await Promise.all([
      delayed('console-bulk'),
      delayed('console-bulk'),
      delayed('console-keep'),
    ]);

    const { page } = await open('/messages');
    await page.getByLabel('Message id').fill(one);
    await page.getByRole('button', { name: 'Apply filters' }).click();
    const view = page.getByRole('article', { name: `Message ${one}` });
    await view.getByText('console-one').waitFor();
    expect(await page.getByLabel('Message body').innerText()).toBe('later');
    await view.getByRole('button', { name: 'Cancel message' }).click();
    await view.getByRole('button', { name: 'Yes, cancel it' }).click();
    await page.getByRole('status').getByText(`Cancelled ${one}`).waitFor();
    expect((await t.api(`/v2/messages/${one}`)).status).toBe(404);
    // Gone from the page too: a reload says it is no longer waiting.
    await page.reload();
    await page.getByText(`${one} is not waiting`).waitFor();

    await page.getByText('Cancel by filter').click();
    const form = page.getByRole('form', { name: 'Cancel by filter' });
    await form.getByLabel('Label').fill('console-bulk');
    await form.getByRole('button', { name: 'Cancel matching messages' }).click();
    await form
      .getByRole('group', { name: 'Cancel 2 waiting messages with label=console-bulk?' })
      .getByRole('button', { name: 'Yes, cancel them' })
      .click();
    await page.getByRole('status').getByText('Cancelled 2 messages.').waitFor();
    for (const id of [bulkA, bulkB]) expect((await t.api(`/v2/messages/${id}`)).status).toBe(404);
    expect((await t.api(`/v2/messages/${kept}`)).status).toBe(200);
  });

  it('sends no request to any host but Ferry', () => {
    const origin = new URL(t.url).origin;
    const all = pages.flatMap((p) => p.requests);
    expect(all.length).toBeGreaterThan(20);
    expect(all.filter((url) => !url.startsWith(`${origin}/`) && !url.startsWith('data:'))).toEqual(
      [],
    );
  });
});
