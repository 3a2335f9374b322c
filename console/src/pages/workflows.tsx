/**
 * Workflow runs: the runs with their state and filters, a run's steps as a timeline, cancel; the
 * workflow DLQ with the failure function's state, and resume, restart or re-run the failure
 * callback, for one run or a selection.
 */
import { useMutation, useQuery, useQueryClient } from '@tanstack/preact-query';
import { useState } from 'preact/hooks';
import { Link } from 'wouter-preact';
import { request } from '../api';
import {
  ActionsOff,
  actionsOff,
  ConfirmButton,
  Empty,
  ErrorBox,
  Field,
  Loading,
  Notice,
  PageHeader,
  Pager,
} from '../components';
import { FilterForm, toQuery, useUrlQuery } from '../filters';
import { formatDuration, formatTime } from '../format';
import { segment } from '../paths';
import type { WorkflowDlqMessage, WorkflowRun } from '../types';

interface RunPage {
  cursor?: string;
  runs: WorkflowRun[];
}
interface WorkflowDlqPage {
  cursor?: string;
  messages: WorkflowDlqMessage[];
}
type Step = Record<string, unknown>;

const RUN_FILTERS = ['workflowRunId', 'workflowUrl', 'state', 'label', 'cursor'] as const;
const DLQ_FILTERS = ['workflowRunId', 'workflowUrl', 'label', 'failureFunctionState'] as const;
const RUN_STATES = ['RUN_STARTED', 'RUN_SUCCESS', 'RUN_FAILED', 'RUN_CANCELED'] as const;

function Tabs(props: { dlq: boolean }) {
  return (
    <nav class="tabs" aria-label="Workflow views">
      <Link href="/workflows" aria-current={props.dlq ? undefined : 'page'}>
        Runs
      </Link>
      <Link href="/workflows?view=dlq" aria-current={props.dlq ? 'page' : undefined}>
        Workflow DLQ
      </Link>
    </nav>
  );
}

export function WorkflowsPage() {
  const [params, setParams] = useUrlQuery();
  const dlq = params.get('view') === 'dlq';
  return (
    <section>
      <PageHeader title="Workflows" />
      <Tabs dlq={dlq} />
      {dlq ? (
        <WorkflowDlq params={params} setParams={(v) => setParams({ ...v, view: 'dlq' })} />
      ) : (
        <Runs params={params} setParams={setParams} />
      )}
    </section>
  );
}

type ViewProps = {
  params: URLSearchParams;
  setParams: (values: Record<string, string | undefined>) => void;
};

function Runs(props: ViewProps) {
  const query = toQuery(props.params, RUN_FILTERS);
  const runs = useQuery({
    queryKey: ['workflow-runs', query],
    queryFn: () => request<RunPage>('/v2/workflows/logs', { query: { ...query, count: 50 } }),
  });
  const current = Object.fromEntries(props.params.entries());
  return (
    <>
      <FilterForm label="Run filters" params={props.params} onApply={props.setParams}>
        <Field label="Run id">
          <input name="workflowRunId" defaultValue={props.params.get('workflowRunId') ?? ''} />
        </Field>
        <Field label="Workflow URL">
          <input name="workflowUrl" defaultValue={props.params.get('workflowUrl') ?? ''} />
        </Field>
        <Field label="Run state">
          <select name="state" defaultValue={props.params.get('state') ?? ''}>
            <option value="">Any</option>
            {RUN_STATES.map((s) => (
              <option key={s}>{s}</option>
            ))}
          </select>
        </Field>
        <Field label="Label">
          <input name="label" defaultValue={props.params.get('label') ?? ''} />
        </Field>
      </FilterForm>
      {runs.isPending ? (
        <Loading what="workflow runs" />
      ) : runs.isError ? (
        <ErrorBox error={runs.error} what="load the workflow runs" />
      ) : runs.data.runs.length === 0 ? (
        <Empty>No workflow runs match.</Empty>
      ) : (
        <>
          <div class="table-wrap">
            <table class="list" aria-label="Workflow runs">
              <thead>
                <tr>
                  <th scope="col">Started</th>
                  <th scope="col">Run</th>
                  <th scope="col">State</th>
                  <th scope="col">URL</th>
                  <th scope="col">Steps</th>
                </tr>
              </thead>
              <tbody>
                {runs.data.runs.map((run) => (
                  <tr key={run.workflowRunId}>
                    <td class="nowrap">{formatTime(run.workflowRunCreatedAt)}</td>
                    <td class="mono">
                      <RunLink runId={run.workflowRunId} table="runs" />
                    </td>
                    <td>
                      <span class={`badge state-${runTone(run.workflowState)}`}>
                        {run.workflowState}
                      </span>
                    </td>
                    <td class="mono clip" title={run.workflowUrl}>
                      {run.workflowUrl}
                    </td>
                    <td>{run.steps.reduce((n, g) => n + g.steps.length, 0)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <Pager
            cursor={runs.data.cursor || undefined}
            current={current}
            setParams={props.setParams}
          />
        </>
      )}
    </>
  );
}

/** A run's id linking to its page, or the id and why it has none (see paths.ts). */
function RunLink(props: { runId: string; table: string }) {
  const off = actionsOff(props.table, props.runId);
  if (off) {
    return (
      <>
        <span aria-describedby={off.id}>{props.runId}</span> <ActionsOff off={off} />
      </>
    );
  }
  return <Link href={`/workflows/runs/${encodeURIComponent(props.runId)}`}>{props.runId}</Link>;
}

function runTone(state: string): string {
  return { RUN_SUCCESS: 'delivered', RUN_FAILED: 'failed', RUN_STARTED: 'active' }[state] ?? '';
}

/** A step field as text (`stepName`, `stepType` are strings; anything else is shown as JSON). */
function text(value: unknown): string {
  if (value === undefined || value === null) return '';
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/**
 * A step of a run's last group (`type: "next"`): the step a failed run failed at
 * (`STEP_FAILED`), or one a running run is at (`STEP_PROGRESS`, `STEP_RETRY` after failed
 * attempts), among them a `context.call` on its way (`callType: "toCallback"`) or its response
 * coming back (`"fromCallback"`). It wrote no result, so it is shown by its last error at that
 * error's time, or, with none, by what it waits for at its next delivery time.
 */
function nextStep(step: Step): Step {
  const errors = (step.errors as { error?: string; time?: number }[] | undefined) ?? [];
  const last = errors[errors.length - 1];
  const failed = step.state === 'STEP_FAILED';
  return {
    stepName: failed ? 'failed step' : 'next step',
    stepType: failed ? 'STEP_FAILED' : text(step.state),
    ...step,
    out: last?.error ?? (failed ? undefined : waitsFor(step)),
    createdAt: last?.time ?? step.nextDeliveryTime,
  };
}

/** What a step a running run is at waits for, in words. */
function waitsFor(step: Step): string {
  if (step.callType === 'toCallback') {
    return `calling ${text(step.callMethod)} ${text(step.callUrl)}`.replace(/ +/g, ' ').trim();
  }
  return step.callType === 'fromCallback' ? 'the call’s response on its way back' : 'waiting';
}

/** The timeline's colour of a step, by its `state` (a history entry's is `STEP_SUCCESS`). */
function stepTone(step: Step): string {
  if (step.state === 'STEP_FAILED') return 'failed';
  if (step.state === 'STEP_RETRY') return 'error';
  return step.state === 'STEP_PROGRESS' ? 'active' : 'delivered';
}

function stepText(step: Step): string {
  const value = step.out ?? step.body ?? step.outBase64 ?? step.bodyBase64;
  if (value === undefined) return '';
  return typeof value === 'string' ? value : JSON.stringify(value);
}

export function WorkflowRunPage(props: { runId: string }) {
  const client = useQueryClient();
  const run = useQuery({
    queryKey: ['workflow-runs', 'run', props.runId],
    queryFn: async () =>
      (
        await request<RunPage>('/v2/workflows/logs', {
          query: { workflowRunId: props.runId, count: 1 },
        })
      ).runs[0] ?? null,
  });
  const cancel = useMutation({
    // `cancel=true`: without it the API ends the run as completed (the SDK's completion call).
    mutationFn: () =>
      request(`/v2/workflows/runs/${segment(props.runId, 'Workflow run')}`, {
        method: 'DELETE',
        query: { cancel: true },
      }),
    onSuccess: () => client.invalidateQueries({ queryKey: ['workflow-runs'] }),
  });
  const steps = (run.data?.steps ?? []).flatMap((g) =>
    g.steps.map((s): Step => ({ ...(g.type === 'next' ? nextStep(s) : s), group: g.type })),
  );
  const start = run.data?.workflowRunCreatedAt ?? 0;
  return (
    <section>
      <PageHeader
        title={
          <>
            Workflow run <bdi>{props.runId}</bdi>
          </>
        }
      >
        <Link href="/workflows">All runs</Link>
        {run.data?.workflowState === 'RUN_STARTED' && (
          <ConfirmButton
            label="Cancel run"
            question="Cancel this run? Its remaining steps will not run."
            confirmLabel="Yes, cancel the run"
            onConfirm={() => cancel.mutate()}
          />
        )}
      </PageHeader>
      {cancel.isSuccess && <Notice>Run cancelled.</Notice>}
      {cancel.isError && <ErrorBox error={cancel.error} what="cancel the run" />}
      {run.isPending ? (
        <Loading what="the run" />
      ) : run.isError ? (
        <ErrorBox error={run.error} what="load the run" />
      ) : !run.data ? (
        <Empty>No such run in this account.</Empty>
      ) : (
        <>
          <dl class="facts">
            <dt>State</dt>
            <dd>
              <span class={`badge state-${runTone(run.data.workflowState)}`}>
                {run.data.workflowState}
              </span>
            </dd>
            <dt>URL</dt>
            <dd class="mono">{run.data.workflowUrl}</dd>
            <dt>Started</dt>
            <dd>{formatTime(run.data.workflowRunCreatedAt)}</dd>
            {run.data.workflowRunCompletedAt !== undefined && (
              <>
                <dt>Finished</dt>
                <dd>
                  {formatTime(run.data.workflowRunCompletedAt)} (
                  {formatDuration(run.data.workflowRunCompletedAt - start)})
                </dd>
              </>
            )}
            {run.data.dlqId && (
              <>
                <dt>In the workflow DLQ</dt>
                <dd class="mono">
                  <Link
                    href={`/workflows?view=dlq&workflowRunId=${encodeURIComponent(props.runId)}`}
                  >
                    {run.data.dlqId}
                  </Link>
                </dd>
              </>
            )}
          </dl>
          <h2>Steps</h2>
          <ol class="timeline" aria-label="Steps">
            {steps.map((step, i) => (
              <li key={i} class={`step state-${stepTone(step)}`}>
                <strong>{text(step.stepName) || `step ${i}`}</strong>
                <span class="badge">{text(step.stepType) || text(step.callType)}</span>
                {step.group === 'parallel' && <span class="muted">parallel</span>}
                {step.group === 'next' && step.stepType !== step.state && (
                  <span class="muted">{text(step.state)}</span>
                )}
                <span class="nowrap">{formatTime(Number(step.createdAt))}</span>
                {i > 0 && (
                  <span class="muted">+{formatDuration(Number(step.createdAt) - start)}</span>
                )}
                <code class="clip-inline" title={stepText(step)}>
                  {stepText(step)}
                </code>
              </li>
            ))}
          </ol>
          {run.data.workflowRunResponse !== undefined && (
            <>
              <h2>Result</h2>
              <pre class="body">{run.data.workflowRunResponse}</pre>
            </>
          )}
        </>
      )}
    </section>
  );
}

type DlqAction = 'resume' | 'restart' | 'callback';

function WorkflowDlq(props: ViewProps) {
  const client = useQueryClient();
  const query = toQuery(props.params, DLQ_FILTERS);
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const list = useQuery({
    queryKey: ['workflow-dlq', query],
    queryFn: () => request<WorkflowDlqPage>('/v2/workflows/dlq', { query }),
  });
  const act = useMutation({
    mutationFn: async ({ action, ids }: { action: DlqAction; ids: string[] }) => {
      if (action === 'callback') {
        for (const id of ids) {
          await request(`/v2/workflows/dlq/callback/${segment(id, 'Workflow DLQ entry')}`, {
            method: 'POST',
          });
        }
        return `Failure callback sent again for ${ids.length}.`;
      }
      const answer = await request<{ workflowRuns: { workflowRunId: string }[] }>(
        `/v2/workflows/dlq/${action}`,
        { method: 'POST', query: { dlqIds: ids } },
      );
      const verb = action === 'resume' ? 'Resumed' : 'Restarted';
      return `${verb} ${answer.workflowRuns.map((r) => r.workflowRunId).join(', ')}.`;
    },
    onSuccess: async () => {
      setSelected(new Set());
      await client.invalidateQueries({ queryKey: ['workflow-dlq'] });
      await client.invalidateQueries({ queryKey: ['workflow-runs'] });
    },
  });
  const ids = [...selected];
  const toggle = (id: string): void => {
    const next = new Set(selected);
    if (next.has(id)) next.delete(id);
    else next.add(id);
    setSelected(next);
  };
  return (
    <>
      <div class="actions">
        <button
          type="button"
          disabled={ids.length === 0}
          onClick={() => act.mutate({ action: 'resume', ids })}
        >
          Resume selected
        </button>
        <button
          type="button"
          disabled={ids.length === 0}
          onClick={() => act.mutate({ action: 'restart', ids })}
        >
          Restart selected
        </button>
      </div>
      {act.isSuccess && <Notice>{act.data}</Notice>}
      {act.isError && <ErrorBox error={act.error} what="act on the workflow DLQ" />}
      <FilterForm label="Workflow DLQ filters" params={props.params} onApply={props.setParams}>
        <Field label="Run id">
          <input name="workflowRunId" defaultValue={props.params.get('workflowRunId') ?? ''} />
        </Field>
        <Field label="Workflow URL">
          <input name="workflowUrl" defaultValue={props.params.get('workflowUrl') ?? ''} />
        </Field>
        <Field label="Label">
          <input name="label" defaultValue={props.params.get('label') ?? ''} />
        </Field>
        <Field label="Failure function state">
          <select
            name="failureFunctionState"
            defaultValue={props.params.get('failureFunctionState') ?? ''}
          >
            <option value="">Any</option>
            {['CALLBACK_INPROGRESS', 'CALLBACK_SUCCESS', 'CALLBACK_FAIL', 'CALLBACK_CANCELED'].map(
              (s) => (
                <option key={s}>{s}</option>
              ),
            )}
          </select>
        </Field>
      </FilterForm>
      {list.isPending ? (
        <Loading what="the workflow DLQ" />
      ) : list.isError ? (
        <ErrorBox error={list.error} what="load the workflow DLQ" />
      ) : list.data.messages.length === 0 ? (
        <Empty>No failed runs in the workflow DLQ.</Empty>
      ) : (
        <div class="table-wrap">
          <table class="list" aria-label="Workflow DLQ">
            <thead>
              <tr>
                <th scope="col">
                  <span class="sr-only">Selected</span>
                </th>
                <th scope="col">Failed at</th>
                <th scope="col">Run</th>
                <th scope="col">URL</th>
                <th scope="col">Status</th>
                <th scope="col">Failure function</th>
                <th scope="col">
                  <span class="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {list.data.messages.map((m) => (
                <tr key={m.dlqId}>
                  <td>
                    <input
                      type="checkbox"
                      aria-label={`Select ${m.workflowRunId}`}
                      checked={selected.has(m.dlqId)}
                      onChange={() => toggle(m.dlqId)}
                    />
                  </td>
                  <td class="nowrap">{formatTime(m.dlqCreatedAt)}</td>
                  <td class="mono">
                    <RunLink runId={m.workflowRunId} table="workflow-dlq" />
                  </td>
                  <td class="mono clip" title={m.workflowUrl}>
                    {m.workflowUrl}
                  </td>
                  <td>{m.responseStatus ?? 'no response'}</td>
                  <td>{m.failureFunctionState ?? 'none'}</td>
                  <td class="row-actions">
                    <button
                      type="button"
                      aria-label={`Resume ${m.workflowRunId}`}
                      onClick={() => act.mutate({ action: 'resume', ids: [m.dlqId] })}
                    >
                      Resume
                    </button>
                    <button
                      type="button"
                      aria-label={`Restart ${m.workflowRunId}`}
                      onClick={() => act.mutate({ action: 'restart', ids: [m.dlqId] })}
                    >
                      Restart
                    </button>
                    <button
                      type="button"
                      aria-label={`Re-run the failure callback of ${m.workflowRunId}`}
                      onClick={() => act.mutate({ action: 'callback', ids: [m.dlqId] })}
                    >
                      Re-run failure callback
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </>
  );
}
