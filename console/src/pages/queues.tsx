/**
 * Queues: each queue's parallelism, lag (messages waiting to start) and paused state; pause,
 * resume, delete (which cancels its messages), and create or change one.
 */
import { useMutation, useQuery, useQueryClient } from '@tanstack/preact-query';
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
  PauseButton,
  phrase,
} from '../components';
import { formatTime } from '../format';
import { formText } from '../forms';
import { segment } from '../paths';
import type { Queue } from '../types';

type QueueAction = { name: string; action: 'pause' | 'resume' | 'delete' };

function UpsertQueue() {
  const client = useQueryClient();
  const upsert = useMutation({
    mutationFn: (body: { queueName: string; parallelism?: number }) =>
      request('/v2/queues', { method: 'POST', body }),
    onSuccess: () => client.invalidateQueries({ queryKey: ['queues'] }),
  });
  return (
    <details class="panel">
      <summary>Create or change a queue</summary>
      <form
        class="inline-form"
        aria-label="Create or change a queue"
        onSubmit={(event) => {
          event.preventDefault();
          const form = new FormData(event.currentTarget);
          const parallelism = formText(form, 'parallelism');
          upsert.mutate({
            queueName: formText(form, 'queueName'),
            ...(parallelism ? { parallelism: Number(parallelism) } : {}),
          });
        }}
      >
        <Field label="Queue name">
          <input name="queueName" required spellcheck={false} />
        </Field>
        <Field label="Parallelism">
          <input name="parallelism" type="number" min={1} step={1} />
        </Field>
        <button type="submit" disabled={upsert.isPending}>
          Save queue
        </button>
      </form>
      {upsert.isSuccess && <Notice>Queue saved.</Notice>}
      {upsert.isError && <ErrorBox error={upsert.error} what="save the queue" />}
    </details>
  );
}

export function QueuesPage() {
  const client = useQueryClient();
  const queues = useQuery({
    queryKey: ['queues'],
    queryFn: () => request<Queue[]>('/v2/queues'),
    refetchInterval: 5_000,
  });
  const act = useMutation({
    mutationFn: ({ name, action }: QueueAction) =>
      action === 'delete'
        ? request(`/v2/queues/${segment(name, 'Queue')}`, { method: 'DELETE' })
        : request(`/v2/queues/${segment(name, 'Queue')}/${action}`, { method: 'POST' }),
    onSuccess: () => client.invalidateQueries({ queryKey: ['queues'] }),
  });
  return (
    <section>
      <PageHeader title="Queues" />
      <p class="muted">
        A queue starts at most <em>parallelism</em> of its messages at once, in order; its lag is
        the number of messages waiting to start. Publish into one with{' '}
        <code>POST /v2/enqueue/&lt;queue&gt;/&lt;destination&gt;</code>.
      </p>
      <UpsertQueue />
      {act.isSuccess && (
        <Notice>
          {act.variables.action === 'delete' ? (
            <>
              Deleted queue <bdi>{act.variables.name}</bdi> and cancelled its waiting messages.
            </>
          ) : (
            <>
              Queue <bdi>{act.variables.name}</bdi>{' '}
              {act.variables.action === 'pause' ? 'paused' : 'resumed'}.
            </>
          )}
        </Notice>
      )}
      {act.isError && <ErrorBox error={act.error} what="change the queue" />}
      {queues.isPending ? (
        <Loading what="queues" />
      ) : queues.isError ? (
        <ErrorBox error={queues.error} what="load the queues" />
      ) : queues.data.length === 0 ? (
        <Empty>No queues yet: enqueueing a message creates its queue.</Empty>
      ) : (
        <div class="table-wrap">
          <table class="list" aria-label="Queues">
            <thead>
              <tr>
                <th scope="col">Queue</th>
                <th scope="col" class="num">
                  Parallelism
                </th>
                <th scope="col" class="num">
                  Lag
                </th>
                <th scope="col">State</th>
                <th scope="col">Changed</th>
                <th scope="col">
                  <span class="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {queues.data.map((q) => {
                const off = actionsOff('queues', q.name);
                return (
                  <tr key={q.name}>
                    <td class="mono">{q.name}</td>
                    <td class="num">{q.parallelism}</td>
                    <td class="num">{q.lag}</td>
                    <td>{q.paused ? 'Paused' : 'Active'}</td>
                    <td class="nowrap">{formatTime(q.updatedAt)}</td>
                    <td class="row-actions">
                      <PauseButton
                        paused={q.paused}
                        name={`queue ${q.name}`}
                        off={off}
                        disabled={act.isPending}
                        onToggle={(action) => act.mutate({ name: q.name, action })}
                      />
                      <ConfirmButton
                        label="Delete"
                        name={`Delete queue ${q.name}`}
                        question={phrase`Delete queue ${q.name} and cancel its ${q.lag} waiting messages?`}
                        confirmLabel="Yes, delete"
                        off={off}
                        onConfirm={() => act.mutate({ name: q.name, action: 'delete' })}
                      />
                      {off && <ActionsOff off={off} />}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
