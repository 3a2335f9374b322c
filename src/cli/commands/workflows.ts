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
import { cell, counted, print, table, time } from './output.js';
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
  time(m.workflowCreatedAt),
];

type ResumeOpts = ConnectionFlags & { retries?: number; delay?: string };

/**
 * Resumes (or restarts) each DLQ id on its own: the bulk answer lists only the runs it made, in
 * the DLQ's order and without their DLQ ids, so one call per id is what tells which new run
 * came from which entry, and which id was not in the DLQ.
 */
async function resumeEach(
  client: FerryClient,
  ids: string[],
  restart: boolean,
  headers: Record<string, string>,
): Promise<{ workflowRuns: (ResumedRun & { dlqId: string })[]; notInDlq: string[] }> {
  const workflowRuns: (ResumedRun & { dlqId: string })[] = [];
  const notInDlq: string[] = [];
  for (const dlqId of new Set(ids)) {
    const { workflowRuns: runs } = await client.workflows.resume(
      { dlqIds: [dlqId] },
      { restart, headers },
    );
    const [run] = runs;
    if (run === undefined) notInDlq.push(dlqId);
    else workflowRuns.push({ dlqId, ...run });
  }
  return { workflowRuns, notInDlq };
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
      const res = await resumeEach(messagingClient(opts), ids, name === 'restart', headers);
      print(opts.json, res, () => {
        const rows = table(
          ['DLQ ID', 'NEW RUN ID'],
          res.workflowRuns.map((r) => [cell(r.dlqId), cell(r.workflowRunId)]),
        );
        const missing = res.notInDlq.map(cell).join(' ');
        return missing === '' ? rows : `${rows}\nnot in the DLQ: ${missing}`;
      });
    },
  );
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
        table(['DLQ ID', 'RUN ID', 'URL', 'STATUS', 'CREATED'], page.messages.map(dlqRow)),
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
    .addCommand(cancel)
    .addCommand(dlqCommand());
}
