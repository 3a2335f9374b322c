/**
 * `ferry messages list`, `ferry workflows …` and `ferry flow-control …` as an operator runs
 * them: the built `ferry` against a started Ferry, connecting through credentials.json. Workflow
 * runs are made by speaking the protocol (as test/workflows-svc.test.ts does), not with the
 * workflow SDK: a trigger to an endpoint that answers 500 with no retries fails its run into the
 * workflow DLQ; a trigger delayed by an hour keeps its run started.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import type { FlowControlKey } from '../src/sdk/flow-control.js';
import type { Message, WorkflowDlqMessage, WorkflowRun } from '../src/sdk/types.js';
import { cliJson, eventually, runCli, useCliServer } from './helpers/cli.js';

/** Each test runs the CLI many times, a second or two each on a busy machine. */
const SLOW = { timeout: 180_000 };

/** Ferry and a destination that answers 500 under `/fail`; the CLI connects through `server.env`. */
const server = useCliServer('ferry-cli-wf', (req) => ({
  status: req.path.startsWith('/fail') ? 500 : 200,
}));

interface MessagePage {
  messages: Message[];
  cursor?: string;
}
interface RunPage {
  runs: WorkflowRun[];
}
interface DlqPage {
  messages: WorkflowDlqMessage[];
}
interface Resumed {
  workflowRuns: { dlqId: string; workflowRunId: string; workflowCreatedAt: number }[];
  notInDlq: string[];
}

/** Starts a workflow run at `path` of the receiver, as the workflow SDK's trigger does. */
async function trigger(runId: string, path: string, headers: Record<string, string>) {
  const res = await fetch(
    `${server.ferry.credentials.baseUrl}/v2/publish/${server.dest.url}${path}`,
    {
      method: 'POST',
      headers: {
        Authorization: `Bearer ${server.ferry.credentials.token}`,
        'Svc-Workflow-RunId': runId,
        'Svc-Workflow-Init': 'true',
        ...headers,
      },
      body: 'payload',
    },
  );
  expect(res.status, await res.text()).toBe(200);
}

const runs = async (...args: string[]): Promise<WorkflowRun[]> =>
  (await cliJson<RunPage>(['workflows', 'list', ...args], server.env)).runs;

const runIds = async (...args: string[]): Promise<string[]> =>
  (await runs(...args)).map((r) => r.workflowRunId);

/** The workflow DLQ entry of `runId`, once its run has failed into the DLQ. */
const dlqEntryOf = (runId: string): Promise<WorkflowDlqMessage> =>
  eventually(async () => {
    const page = await cliJson<DlqPage>(['workflows', 'dlq', 'list'], server.env);
    return page.messages.find((m) => m.workflowRunId === runId);
  });

const lines = (text: string): string[] => text.trimEnd().split('\n');

describe('ferry messages list', SLOW, () => {
  it('shows delayed messages newest first with label and due time; filters; pages', async () => {
    const publish = async (path: string, delay: string, label: string) =>
      (
        await cliJson<{ messageId: string }>(
          [
            'publish',
            `${server.dest.url}${path}`,
            ...['--body', 'x', '--delay', delay, '--retries', '2', '--label', label],
          ],
          server.env,
        )
      ).messageId;
    const first = await publish('/later-a', '1h', 'alpha');
    const second = await publish('/later-b', '2h', 'beta');

    const all = await cliJson<MessagePage>(['messages', 'list'], server.env);
    const ids = all.messages.map((m) => m.messageId);
    expect(ids).toContain(first);
    expect(ids.indexOf(second)).toBeLessThan(ids.indexOf(first));
    const a = all.messages.find((m) => m.messageId === first);
    expect(a?.notBefore).toBeGreaterThan(Date.now() + 50 * 60_000);

    const table = await runCli(['messages', 'list', '--label', 'alpha'], server.env);
    expect(table.status).toBe(0);
    const [header, ...rows] = lines(table.stdout);
    expect(header).toMatch(/^MESSAGE ID\s+URL\s+STATE\s+NOT BEFORE\s+RETRIED\s+LABEL\s+CREATED$/);
    expect(rows).toHaveLength(1);
    const due = new Date(a?.notBefore ?? 0).toISOString();
    expect(rows[0]).toMatch(
      new RegExp(
        `^${first}\\s+${server.dest.url}/later-a\\s+DELAYED\\s+${due}\\s+0 of 2\\s+alpha\\s+\\S+Z$`,
      ),
    );

    const byLabel = await cliJson<MessagePage>(
      ['messages', 'list', '--label', 'beta', '--label', 'alpha'],
      server.env,
    );
    expect(byLabel.messages.map((m) => m.messageId)).toEqual([second, first]);
    const byUrl = await cliJson<MessagePage>(
      ['messages', 'list', '--destination', `${server.dest.url}/later-b`],
      server.env,
    );
    expect(byUrl).toEqual({ messages: [expect.objectContaining({ messageId: second })] });

    const page1 = await cliJson<MessagePage>(
      ['messages', 'list', '--label', 'alpha', '--label', 'beta', '--count', '1'],
      server.env,
    );
    expect(page1.messages.map((m) => m.messageId)).toEqual([second]);
    expect(page1.cursor).toBeDefined();
    const page2 = await cliJson<MessagePage>(
      ['messages', 'list', '--label', 'alpha', '--label', 'beta', '--cursor', page1.cursor ?? ''],
      server.env,
    );
    expect(page2.messages.map((m) => m.messageId)).toEqual([first]);
    expect(page2.cursor).toBeUndefined();
  });

  it('prints a control character of a label escaped', async () => {
    // The server refuses C0 controls in a label; C1 ones (U+009B: CSI on an 8-bit terminal) pass.
    const { messageId } = await cliJson<{ messageId: string }>(
      ['publish', `${server.dest.url}/c1`, '--delay', '1h', '--label', 'a\u009bb'],
      server.env,
    );
    const page = await cliJson<MessagePage>(
      ['messages', 'list', '--destination', `${server.dest.url}/c1`],
      server.env,
    );
    expect(page.messages[0]?.labels).toEqual(['a\u009bb']);
    const shown = await runCli(
      ['messages', 'list', '--destination', `${server.dest.url}/c1`],
      server.env,
    );
    expect(shown.stdout).toMatch(new RegExp(`^${messageId}\\s.*\\sa\\\\x9bb\\s`, 'm'));
    expect(shown.stdout).not.toContain('\u009b');
  });
});

describe('ferry workflows', SLOW, () => {
  it('lists runs by state, shows the DLQ, resumes with overrides, cancels running runs', async () => {
    await trigger('wfr_cli-wait', '/wait', { 'Svc-Delay': '1h' });
    await trigger('wfr_cli-fail', '/fail-wf', { 'Svc-Retries': '0', 'Svc-Label': 'cli-wf' });

    const failed = await eventually(async () => {
      const found = await runs('--state', 'RUN_FAILED');
      return found.some((r) => r.workflowRunId === 'wfr_cli-fail') ? found : undefined;
    });
    expect(failed.map((r) => r.workflowRunId)).not.toContain('wfr_cli-wait');
    expect(await runs('--run', 'wfr_cli-wait')).toEqual([
      expect.objectContaining({ workflowRunId: 'wfr_cli-wait', workflowState: 'RUN_STARTED' }),
    ]);
    const table = await runCli(['workflows', 'list', '--state', 'run_failed'], server.env);
    const [header, ...rows] = lines(table.stdout);
    expect(header).toMatch(/^RUN ID\s+URL\s+STATE\s+CREATED\s+COMPLETED$/);
    expect(rows).toContainEqual(
      expect.stringMatching(/^wfr_cli-fail\s+\S+\/fail-wf\s+RUN_FAILED\s+\S+Z\s+\S+Z$/),
    );

    const entry = await dlqEntryOf('wfr_cli-fail');
    expect(entry.responseStatus).toBe(500);
    const shown = await runCli(['workflows', 'get', 'wfr_cli-fail'], server.env);
    expect(shown.status).toBe(0);
    expect(lines(shown.stdout)).toEqual([
      'run:          wfr_cli-fail',
      `url:          ${server.dest.url}/fail-wf`,
      'state:        RUN_FAILED',
      expect.stringMatching(/^created: {6}\S+Z$/),
      expect.stringMatching(/^completed: {4}\S+Z$/),
      'labels:       cli-wf',
      'resumed from: -',
      `dlq id:       ${entry.dlqId}`,
      'result:       -',
      '',
      expect.stringMatching(/^STEP\s+NAME\s+TYPE\s+STATE\s+GROUP\s+TIME\s+OUT$/),
      expect.stringMatching(/^0\s+init\s+Initial\s+STEP_SUCCESS\s+-\s+\S+Z\s+payload$/),
      expect.stringMatching(/^-\s+-\s+-\s+STEP_FAILED\s+next\s+\S+Z\s+HTTP 500$/),
    ]);
    const json = await cliJson<WorkflowRun>(['workflows', 'get', 'wfr_cli-fail'], server.env);
    expect(json).toMatchObject({ workflowRunId: 'wfr_cli-fail', dlqId: entry.dlqId });
    const missing = await runCli(['workflows', 'get', 'wfr_nosuch'], server.env);
    expect(missing).toMatchObject({
      status: 1,
      stdout: '',
      stderr: 'ferry: workflow run "wfr_nosuch" not found\n',
    });
    const dlqTable = await runCli(['workflows', 'dlq', 'list', '--label', 'cli-wf'], server.env);
    expect(lines(dlqTable.stdout)).toEqual([
      expect.stringMatching(/^DLQ ID\s+RUN ID\s+URL\s+STATUS\s+FAILED\s+CREATED$/),
      expect.stringMatching(
        new RegExp(
          `^${entry.dlqId}\\s+wfr_cli-fail\\s+\\S+/fail-wf\\s+500\\s+` +
            `${new Date(entry.dlqCreatedAt).toISOString()}\\s+\\S+Z$`,
        ),
      ),
    ]);
    const elsewhere = await cliJson<DlqPage>(
      ['workflows', 'dlq', 'list', '--workflow-url', `${server.dest.url}/other`],
      server.env,
    );
    expect(elsewhere.messages).toEqual([]);

    // Resumed an hour later with 4 retries (override headers): the new run stays started.
    const resumed = await runCli(
      ['workflows', 'dlq', 'resume', entry.dlqId, 'dlq_nosuch', '--delay', '1h', '--retries', '4'],
      server.env,
    );
    expect(resumed.status).toBe(0);
    const out = lines(resumed.stdout);
    expect(out[0]).toMatch(/^DLQ ID\s+NEW RUN ID$/);
    const newRunId = new RegExp(`^${entry.dlqId}\\s+(wfr_\\S+)$`).exec(out[1] ?? '')?.[1] ?? '';
    expect(newRunId).not.toBe('');
    expect(out.slice(2)).toEqual(['not in the DLQ: dlq_nosuch']);
    const newRun = (await runs('--run', newRunId))[0];
    expect(newRun).toMatchObject({
      workflowState: 'RUN_STARTED',
      resumedFrom: { runId: 'wfr_cli-fail', kind: 'resume' },
    });
    expect(await runIds()).toContain(newRunId);
    const step = await cliJson<MessagePage>(
      ['messages', 'list', '--destination', `${server.dest.url}/fail-wf`],
      server.env,
    );
    expect(step.messages).toHaveLength(1);
    expect(step.messages[0]?.maxRetries).toBe(4);
    expect(step.messages[0]?.notBefore).toBeGreaterThan(Date.now() + 50 * 60_000);
    expect(
      (await cliJson<DlqPage>(['workflows', 'dlq', 'list'], server.env)).messages.map(
        (m) => m.dlqId,
      ),
    ).not.toContain(entry.dlqId);

    const cancelled = await runCli(
      ['workflows', 'cancel', 'wfr_cli-wait', newRunId, 'wfr_cli-fail'],
      server.env,
    );
    expect(cancelled).toMatchObject({
      status: 0,
      stdout: 'cancelled 2; 1 of the ids given not running\n',
    });
    expect((await runIds('--state', 'RUN_CANCELED')).sort()).toEqual(
      [newRunId, 'wfr_cli-wait'].sort(),
    );
  });

  it('restarts a failed run from the start and deletes a DLQ entry', async () => {
    await trigger('wfr_cli-restart', '/fail-restart', { 'Svc-Retries': '0' });
    const entry = await dlqEntryOf('wfr_cli-restart');
    const restarted = await cliJson<Resumed>(
      ['workflows', 'dlq', 'restart', entry.dlqId],
      server.env,
    );
    expect(restarted.notInDlq).toEqual([]);
    expect(restarted.workflowRuns).toEqual([
      expect.objectContaining({
        dlqId: entry.dlqId,
        workflowRunId: expect.stringMatching(/^wfr_/),
      }),
    ]);
    const newRunId = restarted.workflowRuns[0]?.workflowRunId ?? '';
    expect((await runs('--run', newRunId))[0]?.resumedFrom).toEqual({
      runId: 'wfr_cli-restart',
      kind: 'restart',
    });

    // The restarted run fails again (its trigger still answers 500, no retries): a new entry.
    const again = await dlqEntryOf(newRunId);
    const deleted = await runCli(
      ['workflows', 'dlq', 'delete', again.dlqId, 'dlq_nosuch'],
      server.env,
    );
    expect(deleted).toMatchObject({
      status: 0,
      stdout: 'deleted 1; 1 of the ids given not in the DLQ\n',
    });
    const left = await cliJson<DlqPage>(['workflows', 'dlq', 'list'], server.env);
    expect(left.messages.map((m) => m.dlqId)).not.toContain(again.dlqId);
    expect((await runs('--run', newRunId))[0]?.workflowState).toBe('RUN_FAILED');
  });
});

/**
 * A front for Ferry that passes every call on but answers 503 to each resume after the first:
 * a server lost halfway through a `dlq resume` of several ids.
 */
async function failingAfterOneResume(): Promise<{ url: string; close(): Promise<void> }> {
  const target = server.ferry.credentials.baseUrl;
  let resumes = 0;
  const front = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      if (req.url?.startsWith('/v2/workflows/dlq/resume') && ++resumes > 1) {
        res.writeHead(503, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: 'the server went away' }));
        return;
      }
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(req.headers)) {
        if (typeof value === 'string' && !['host', 'connection', 'content-length'].includes(name))
          headers[name] = value;
      }
      const body = chunks.length > 0 ? Buffer.concat(chunks) : undefined;
      fetch(`${target}${req.url ?? '/'}`, { method: req.method, headers, body }).then(
        async (answer) => {
          const type = answer.headers.get('content-type') ?? 'application/json';
          res.writeHead(answer.status, { 'content-type': type });
          res.end(Buffer.from(await answer.arrayBuffer()));
        },
        () => res.writeHead(502).end(),
      );
    });
  });
  await new Promise<void>((resolve) => front.listen(0, '127.0.0.1', resolve));
  const { port } = front.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise((resolve) => front.close(() => resolve())),
  };
}

describe('ferry workflows dlq resume, interrupted', SLOW, () => {
  it('prints the entries resumed before a call that failed, then the error, status 1', async () => {
    await trigger('wfr_cli-half-1', '/fail-half', { 'Svc-Retries': '0' });
    await trigger('wfr_cli-half-2', '/fail-half', { 'Svc-Retries': '0' });
    const first = await dlqEntryOf('wfr_cli-half-1');
    const second = await dlqEntryOf('wfr_cli-half-2');
    const front = await failingAfterOneResume();
    try {
      const env = { FERRY_URL: front.url, FERRY_TOKEN: server.ferry.credentials.token };
      const human = await runCli(['workflows', 'dlq', 'resume', first.dlqId, second.dlqId], env);
      expect(human.status).toBe(1);
      const out = lines(human.stdout);
      expect(out).toEqual([
        expect.stringMatching(/^DLQ ID\s+NEW RUN ID$/),
        expect.stringMatching(new RegExp(`^${first.dlqId}\\s+wfr_\\S+$`)),
      ]);
      expect(human.stderr).toBe('ferry: the server went away (HTTP 503)\n');
      const dlq = await cliJson<DlqPage>(['workflows', 'dlq', 'list'], server.env);
      expect(dlq.messages.map((m) => m.dlqId)).toContain(second.dlqId);
      expect(dlq.messages.map((m) => m.dlqId)).not.toContain(first.dlqId);

      // Nothing done before the failure: the error alone, nothing on stdout.
      const none = await runCli(['workflows', 'dlq', 'resume', second.dlqId, '--json'], env);
      expect(none).toMatchObject({ status: 1, stdout: '' });
    } finally {
      await front.close();
    }
  });
});

describe('ferry flow-control', SLOW, () => {
  it('lists, shows, pauses and resumes a key', async () => {
    await cliJson(
      [
        'publish',
        `${server.dest.url}/fc`,
        '--body',
        'x',
        '--delay',
        '1h',
        '--flow-control-key',
        'cli-fc',
        '--parallelism',
        '1',
      ],
      server.env,
    );
    const keys = await cliJson<FlowControlKey[]>(
      ['flow-control', 'list', '--search', 'cli-f'],
      server.env,
    );
    expect(keys).toEqual([
      expect.objectContaining({ flowControlKey: 'cli-fc', parallelismMax: 1, isPaused: false }),
    ]);
    expect(
      await cliJson(['flow-control', 'list', '--search', 'nothing-like-it'], server.env),
    ).toEqual([]);
    const row = async () =>
      lines((await runCli(['flow-control', 'list', '--search', 'cli-fc'], server.env)).stdout);
    expect(await row()).toEqual([
      expect.stringMatching(/^KEY\s+WAITING\s+PARALLELISM\s+RATE\s+PINNED\s+PAUSED$/),
      expect.stringMatching(/^cli-fc\s+1\s+0\/1\s+-\s+-\s+no$/),
    ]);
    const shown = await runCli(['flow-control', 'get', 'cli-fc'], server.env);
    expect(shown.stdout).toMatch(/^parallelism:\s+0\/1$/m);
    expect(shown.stdout).toMatch(/^paused:\s+no$/m);

    expect(await runCli(['flow-control', 'pause', 'cli-fc'], server.env)).toMatchObject({
      status: 0,
      stdout: 'paused cli-fc\n',
    });
    expect(
      (await cliJson<FlowControlKey>(['flow-control', 'get', 'cli-fc'], server.env)).isPaused,
    ).toBe(true);
    expect((await row())[1]).toMatch(/\syes$/);
    const resumed = await cliJson<FlowControlKey>(['flow-control', 'resume', 'cli-fc'], server.env);
    expect(resumed).toMatchObject({ flowControlKey: 'cli-fc', isPaused: false });
    expect(
      (await cliJson<FlowControlKey>(['flow-control', 'get', 'cli-fc'], server.env)).isPaused,
    ).toBe(false);

    const missing = await runCli(['flow-control', 'get', 'no-such-key'], server.env);
    expect(missing.status).toBe(1);
    expect(missing.stdout).toBe('');
    expect(missing.stderr).toMatch(
      /^ferry: flow-control key "no-such-key" not found \(HTTP 404\)\n$/,
    );
  });
});
