/**
 * `ferry workflows`: workflow runs (list, cancel) and the workflow DLQ (list, resume, restart,
 * delete), on the SDK's `WorkflowsApi`.
 */
import { Command } from 'commander';
import type { FerryClient } from '../../sdk/client.js';
import type { ResumedRun, WorkflowDlqMessage, WorkflowRun } from '../../sdk/types.js';
import { act } from './action.js';
import {
  headerPrefix,
  messagingClient,
  withConnection,
  type ConnectionFlags,
} from './connection.js';
import { dlqDeleteCommand } from './messaging.js';
import { cell, counted, print, record, sanitize, table, time } from './output.js';
import { withPaging, type PagingFlags } from './paging.js';
import { collect, integer } from './publish-options.js';

interface FilterFlags extends ConnectionFlags, PagingFlags {
  label: string[];
  workflowUrl?: string;
}

/**
 * The filters the two lists share. `--workflow-url`, as `--url` is the server's URL of every
 * client command.
 */
const withFilters = (command: Command): Command =>
  command
    .option('--label <label>', 'only runs with this label (repeatable)', collect, [])
    .option('--workflow-url <url>', 'only runs of this workflow URL');

const filterOf = (opts: FilterFlags) => ({
  label: opts.label.length ? opts.label : undefined,
  workflowUrl: opts.workflowUrl,
});

const runRow = (r: WorkflowRun): string[] => [
  cell(r.workflowRunId),
  cell(r.workflowUrl),
  cell(r.workflowState),
  time(r.workflowRunCreatedAt),
  time(r.workflowRunCompletedAt),
];

const dlqRow = (m: WorkflowDlqMessage): string[] => [
  cell(m.dlqId),
  cell(m.workflowRunId),
  cell(m.workflowUrl),
  cell(m.responseStatus),
  time(m.dlqCreatedAt),
  time(m.workflowCreatedAt),
];

const num = (v: unknown): number | undefined => (typeof v === 'number' ? v : undefined);

/**
 * One history entry or step in flight as a row: where the run is, and what each step gave. A
 * step that failed or waits for a retry shows its last error, and when that was (or, retrying,
 * when its next attempt is due).
 */
function stepRows(run: WorkflowRun): string[][] {
  const rows: string[][] = [];
  for (const group of run.steps) {
    for (const step of group.steps) {
      const errors = Array.isArray(step.errors) ? (step.errors as Record<string, unknown>[]) : [];
      const last = errors[errors.length - 1];
      // The error text says the status already (`HTTP 500`), or what failed without one.
      const failure = last && cell(last.error);
      rows.push([
        cell(num(step.stepId)),
        cell(step.stepName),
        cell(step.stepType),
        cell(step.state),
        group.type === 'sequential' ? '-' : group.type,
        time(num(step.createdAt) ?? num(step.nextDeliveryTime) ?? num(last?.time)),
        failure ?? cell(step.out ?? step.callUrl),
      ]);
    }
  }
  return rows;
}

/** The run's facts, then its steps: what `ferry workflows get` prints. */
function runText(run: WorkflowRun): string {
  const facts = record([
    ['run', run.workflowRunId],
    ['url', run.workflowUrl],
    ['state', run.workflowState],
    ['created', time(run.workflowRunCreatedAt)],
    ['completed', time(run.workflowRunCompletedAt)],
    ['labels', run.labels ?? run.label],
    ['resumed from', run.resumedFrom && `${run.resumedFrom.runId} (${run.resumedFrom.kind})`],
    ['dlq id', run.dlqId],
    ['result', run.workflowRunResponse],
  ]);
  const steps = table(['STEP', 'NAME', 'TYPE', 'STATE', 'GROUP', 'TIME', 'OUT'], stepRows(run));
  return `${facts}

${steps}`;
}

type ResumeOpts = ConnectionFlags & { retries?: number; delay?: string };

interface Resumed {
  workflowRuns: (ResumedRun & { dlqId: string })[];
  notInDlq: string[];
}

/**
 * Resumes (or restarts) each DLQ id on its own: the bulk answer lists only the runs it made, in
 * the DLQ's order and without their DLQ ids, so one call per id is what tells which new run
 * came from which entry, and which id was not in the DLQ. Stops at the first call that fails;
 * what the calls before it did is in `done` then.
 */
async function resumeEach(
  client: FerryClient,
  ids: string[],
  restart: boolean,
  headers: Record<string, string>,
  done: Resumed,
): Promise<void> {
  for (const dlqId of new Set(ids)) {
    const { workflowRuns: runs } = await client.workflows.resume(
      { dlqIds: [dlqId] },
      { restart, headers },
    );
    const [run] = runs;
    if (run === undefined) done.notInDlq.push(dlqId);
    else done.workflowRuns.push({ dlqId, ...run });
  }
}

function resumeCommand(name: 'resume' | 'restart', description: string): Command {
  return act<ResumeOpts>(
    withConnection(new Command(name).description(description))
      .argument('<dlq-ids...>')
      .option('--retries <n>', 'retries of the remaining steps', integer)
      .option('--delay <duration>', 'wait before the first step (10s, 1h30m)'),
    async (opts, ids) => {
      const prefix = headerPrefix(opts);
      const headers: Record<string, string> = {};
      if (opts.retries !== undefined) headers[`${prefix}-Retries`] = String(opts.retries);
      if (opts.delay !== undefined) headers[`${prefix}-Delay`] = opts.delay;
      const res: Resumed = { workflowRuns: [], notInDlq: [] };
      try {
        await resumeEach(messagingClient(opts), ids, name === 'restart', headers, res);
      } catch (error) {
        // The ids before the failed one are resumed: say so before the error does, so that
        // running the command again for the rest does not resume them twice.
        if (res.workflowRuns.length > 0 || res.notInDlq.length > 0) printResumed(opts.json, res);
        throw error;
      }
      printResumed(opts.json, res);
    },
  );
}

function printResumed(json: boolean | undefined, res: Resumed): void {
  print(json, res, () => {
    const rows = table(
      ['DLQ ID', 'NEW RUN ID'],
      res.workflowRuns.map((r) => [cell(r.dlqId), cell(r.workflowRunId)]),
    );
    const missing = res.notInDlq.map(cell).join(' ');
    return missing === '' ? rows : `${rows}\nnot in the DLQ: ${missing}`;
  });
}

function dlqCommand(): Command {
  const list = act<FilterFlags>(
    withPaging(
      withFilters(
        withConnection(new Command('list').description('list failed runs, newest first')),
      ),
    ),
    async (opts) => {
      const page = await messagingClient(opts).workflows.dlq({
        count: opts.count,
        cursor: opts.cursor,
        filter: filterOf(opts),
      });
      print(opts.json, page, () =>
        table(
          ['DLQ ID', 'RUN ID', 'URL', 'STATUS', 'FAILED', 'CREATED'],
          page.messages.map(dlqRow),
        ),
      );
    },
  );
  const remove = dlqDeleteCommand('remove entries (the runs stay failed)', (client, ids) =>
    client.workflows.deleteDlqMany({ dlqIds: ids }),
  );
  return new Command('dlq')
    .description('the workflow DLQ: runs whose step ran out of retries')
    .addCommand(list)
    .addCommand(resumeCommand('resume', 'run entries again from their failed step, as new runs'))
    .addCommand(resumeCommand('restart', 'run entries again from the first step, as new runs'))
    .addCommand(remove);
}

interface RunListOpts extends FilterFlags {
  state: string[];
  run: string[];
}

export function workflowsCommand(): Command {
  const list = act<RunListOpts>(
    withPaging(
      withFilters(
        withConnection(new Command('list').description('list workflow runs, newest first')),
      )
        .option(
          '--state <state>',
          'only runs in this state: RUN_STARTED, RUN_SUCCESS, RUN_FAILED, RUN_CANCELED (repeatable)',
          collect,
          [],
        )
        .option('--run <id>', 'only this run (repeatable)', collect, []),
      1000,
    ),
    async (opts) => {
      const page = await messagingClient(opts).workflows.logs({
        count: opts.count,
        cursor: opts.cursor,
        filter: {
          ...filterOf(opts),
          state: opts.state.length ? opts.state.map((s) => s.toUpperCase()) : undefined,
          workflowRunId: opts.run.length ? opts.run : undefined,
        },
      });
      print(opts.json, page, () =>
        table(['RUN ID', 'URL', 'STATE', 'CREATED', 'COMPLETED'], page.runs.map(runRow)),
      );
    },
  );
  const get = act<ConnectionFlags>(
    withConnection(
      new Command('get').description('show a run and its steps (the history, then where it is)'),
    ).argument('<run-id>'),
    async (opts, [runId = '']) => {
      const { runs } = await messagingClient(opts).workflows.logs({
        filter: { workflowRunId: runId },
        count: 1,
      });
      const [run] = runs;
      if (!run) throw new Error(`workflow run ${JSON.stringify(sanitize(runId))} not found`);
      print(opts.json, run, () => runText(run));
    },
  );
  const cancel = act<ConnectionFlags>(
    withConnection(new Command('cancel').description('cancel running runs')).argument(
      '<run-ids...>',
    ),
    async (opts, ids) => {
      const res = await messagingClient(opts).workflows.cancel(ids);
      print(opts.json, res, () => counted('cancelled', res.cancelled, ids, 'not running'));
    },
  );
  return new Command('workflows')
    .description('workflow runs and the workflow DLQ')
    .addCommand(list)
    .addCommand(get)
    .addCommand(cancel)
    .addCommand(dlqCommand());
}
