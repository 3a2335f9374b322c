/**
 * Flow control: the account's global parallelism, and every flow-control key with its
 * parallelism, rate and period, waiting and active counts; pause, resume, pin limits, unpin,
 * reset the rate. The key search is kept in the URL.
 */
import { useMutation, useQuery, useQueryClient } from '@tanstack/preact-query';
import { useState } from 'preact/hooks';
import { request, type Query } from '../api';
import {
  ActionsOff,
  actionsOff,
  Empty,
  ErrorBox,
  Field,
  Loading,
  Notice,
  PageHeader,
  PauseButton,
} from '../components';
import { FilterForm, useUrlQuery } from '../filters';
import { formText } from '../forms';
import { segment } from '../paths';
import type { FlowControlKey } from '../types';

type KeyAction = {
  key: string;
  action: 'pause' | 'resume' | 'pin' | 'unpin' | 'resetRate';
  query?: Query;
};

const DONE: Record<KeyAction['action'], string> = {
  pause: 'paused',
  resume: 'resumed',
  pin: 'pinned',
  unpin: 'unpinned',
  resetRate: 'rate reset',
};

function GlobalParallelism() {
  const global = useQuery({
    queryKey: ['flowControl', 'global'],
    queryFn: () =>
      request<{ parallelismMax: number; parallelismCount: number }>('/v2/globalParallelism'),
    refetchInterval: 5_000,
  });
  if (global.isPending) return <Loading what="the global parallelism" />;
  if (global.isError) return <ErrorBox error={global.error} what="load the global parallelism" />;
  return (
    <dl class="figures" aria-label="Global parallelism">
      <div>
        <dt>Global parallelism</dt>
        <dd>
          {global.data.parallelismCount} of {global.data.parallelismMax} in flight
        </dd>
      </div>
    </dl>
  );
}

function PinForm(props: { keyName: string; onPin: (query: Query) => void; busy: boolean }) {
  return (
    <form
      class="inline-form"
      aria-label={`Pin limits of ${props.keyName}`}
      onSubmit={(event) => {
        event.preventDefault();
        const form = new FormData(event.currentTarget);
        props.onPin({
          parallelism: formText(form, 'parallelism') || undefined,
          rate: formText(form, 'rate') || undefined,
          period: formText(form, 'period') || undefined,
        });
      }}
    >
      <Field label="Parallelism">
        <input name="parallelism" type="number" min={1} step={1} />
      </Field>
      <Field label="Rate">
        <input name="rate" type="number" min={1} step={1} />
      </Field>
      <Field label="Period">
        <input name="period" placeholder="1s, 1m, 1h" spellcheck={false} />
      </Field>
      <button type="submit" disabled={props.busy}>
        Pin limits
      </button>
    </form>
  );
}

export function FlowControlPage() {
  const client = useQueryClient();
  const [params, setParams] = useUrlQuery();
  const search = params.get('search') ?? '';
  const [pinning, setPinning] = useState<string>();
  const keys = useQuery({
    queryKey: ['flowControl', 'keys', search],
    queryFn: () =>
      request<FlowControlKey[]>('/v2/flowControl', { query: { search: search || undefined } }),
    refetchInterval: 5_000,
  });
  const act = useMutation({
    mutationFn: ({ key, action, query }: KeyAction) =>
      request(`/v2/flowControl/${segment(key, 'Flow-control key')}/${action}`, {
        method: 'POST',
        query,
      }),
    onSuccess: () => {
      setPinning(undefined);
      return client.invalidateQueries({ queryKey: ['flowControl'] });
    },
  });
  return (
    <section>
      <PageHeader title="Flow control" />
      <p class="muted">
        A flow-control key starts at most <em>parallelism</em> of its messages at once and at most{' '}
        <em>rate</em> per <em>period</em>; the others wait. A publish with the key sets its limits
        unless they are pinned here.
      </p>
      <GlobalParallelism />
      <FilterForm label="Flow-control key search" params={params} onApply={setParams}>
        <Field label="Key contains">
          <input name="search" defaultValue={search} />
        </Field>
      </FilterForm>
      {act.isSuccess && (
        <Notice>
          <bdi>{act.variables.key}</bdi>: {DONE[act.variables.action]}.
        </Notice>
      )}
      {act.isError && <ErrorBox error={act.error} what="change the key" />}
      {keys.isPending ? (
        <Loading what="flow-control keys" />
      ) : keys.isError ? (
        <ErrorBox error={keys.error} what="load the flow-control keys" />
      ) : keys.data.length === 0 ? (
        <Empty>
          {search
            ? 'No flow-control key matches this search.'
            : 'No flow-control keys yet: publishing with a key creates it.'}
        </Empty>
      ) : (
        <div class="table-wrap">
          <table class="list" aria-label="Flow-control keys">
            <thead>
              <tr>
                <th scope="col">Key</th>
                <th scope="col" class="num">
                  Active / parallelism
                </th>
                <th scope="col" class="num">
                  Rate used / rate
                </th>
                <th scope="col" class="num">
                  Period
                </th>
                <th scope="col" class="num">
                  Waiting
                </th>
                <th scope="col">State</th>
                <th scope="col">
                  <span class="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {keys.data.map((k) => {
                const name = k.flowControlKey;
                const pinned = k.isPinnedParallelism || k.isPinnedRate;
                const off = actionsOff('keys', name);
                const offProps = { 'aria-describedby': off?.id, title: off?.reason };
                return (
                  <tr key={name}>
                    <td class="mono">{name}</td>
                    <td class="num">
                      {k.parallelismCount} / {k.parallelismMax || '∞'}
                      {k.isPinnedParallelism ? ' (pinned)' : ''}
                    </td>
                    <td class="num">
                      {k.rateCount} / {k.rateMax || '∞'}
                      {k.isPinnedRate ? ' (pinned)' : ''}
                    </td>
                    <td class="num">{k.ratePeriod} s</td>
                    <td class="num">{k.waitListSize}</td>
                    <td>{k.isPaused ? 'Paused' : 'Active'}</td>
                    <td class="row-actions">
                      <PauseButton
                        paused={k.isPaused}
                        name={`key ${name}`}
                        off={off}
                        disabled={act.isPending}
                        onToggle={(action) => act.mutate({ key: name, action })}
                      />
                      <button
                        type="button"
                        aria-label={`Pin key ${name}`}
                        {...offProps}
                        disabled={off !== undefined}
                        aria-expanded={pinning === name}
                        onClick={() => setPinning(pinning === name ? undefined : name)}
                      >
                        Pin…
                      </button>
                      <button
                        type="button"
                        aria-label={`Unpin key ${name}`}
                        {...offProps}
                        disabled={!pinned || act.isPending || off !== undefined}
                        onClick={() =>
                          act.mutate({
                            key: name,
                            action: 'unpin',
                            query: { parallelism: 'true', rate: 'true' },
                          })
                        }
                      >
                        Unpin
                      </button>
                      <button
                        type="button"
                        aria-label={`Reset rate of key ${name}`}
                        {...offProps}
                        disabled={act.isPending || off !== undefined}
                        onClick={() => act.mutate({ key: name, action: 'resetRate' })}
                      >
                        Reset rate
                      </button>
                      {off && <ActionsOff off={off} />}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
      {pinning && (
        <div class="panel">
          <h2>
            Pin limits of <bdi>{pinning}</bdi>
          </h2>
          <p class="muted">
            Pinned limits stay until unpinned, whatever later publishes say. Leave a field empty to
            keep it.
          </p>
          <PinForm
            keyName={pinning}
            busy={act.isPending}
            onPin={(query) => act.mutate({ key: pinning, action: 'pin', query })}
          />
        </div>
      )}
    </section>
  );
}
