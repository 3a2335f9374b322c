/**
 * The dead-letter queue: filtered list, an entry's last response, retry and delete, one entry
 * or a selection.
 */
import { useMutation, useQuery, useQueryClient } from '@tanstack/preact-query';
import { useState } from 'preact/hooks';
import { Link, useLocation } from 'wouter-preact';
import { request } from '../api';
import {
  ConfirmButton,
  Empty,
  ErrorBox,
  Field,
  HeaderTable,
  Labels,
  labelsOf,
  Loading,
  MessageFacts,
  Notice,
  PageHeader,
  Pager,
  TextOrBase64Body,
} from '../components';
import { FilterForm, toQuery, useUrlQuery } from '../filters';
import { formatTime } from '../format';
import { formRaw } from '../forms';
import { addHeader, addSetting, outgoing, type Outgoing } from '../outgoing';
import { segment } from '../paths';
import { consoleSettings } from '../settings';
import type { DlqMessage, DlqPage as DlqList } from '../types';

const FILTERS = [
  'messageId',
  'url',
  'topicName',
  'label',
  'responseStatus',
  'scheduleId',
  'queueName',
  'cursor',
] as const;

interface RetryOne {
  messageId: string;
}
interface RetryMany {
  responses: RetryOne[];
}

/**
 * What a retry may change (API: publish headers on the retry request): form field, label, the
 * header's name after the prefix (`Retries` → `Svc-Retries`), or a plain header name.
 */
const OVERRIDES = [
  ['Retries', 'Retries', 'prefixed'],
  ['Delay', 'Delay (e.g. 10s, 1h)', 'prefixed'],
  ['Method', 'Method', 'prefixed'],
  ['Retry-Delay', 'Retry delay expression', 'prefixed'],
  ['Timeout', 'Timeout (e.g. 30s)', 'prefixed'],
  ['Label', 'Label', 'prefixed'],
  ['Flow-Control-Key', 'Flow-control key', 'prefixed'],
  ['Flow-Control-Value', 'Flow-control value (parallelism=1, rate=10, period=1m)', 'prefixed'],
  ['Content-Type', 'Content type', 'plain'],
] as const;

type Overrides = Record<string, string>;

/**
 * The overrides as headers, or as query parameters where a header cannot carry the value
 * (outgoing.ts).
 * @throws Error naming a plain header's field whose value no header can carry.
 */
async function overrideRequest(overrides: Overrides): Promise<Outgoing> {
  const { headerPrefix } = await consoleSettings();
  const out = outgoing();
  for (const [name, label, kind] of OVERRIDES) {
    const value = overrides[name]?.trim();
    if (!value) continue;
    if (kind === 'plain') addHeader(out, name, value, label);
    else addSetting(out, `${headerPrefix}-${name}`, value);
  }
  return out;
}

/** Optional overrides for the next retry; empty fields keep what the entry had. */
function RetryOverrides(props: { value: Overrides; onChange: (next: Overrides) => void }) {
  const set = Object.values(props.value).filter((v) => v.trim()).length;
  return (
    <details class="panel">
      <summary>Retry overrides{set > 0 ? ` (${set} set)` : ''}</summary>
      <p class="muted">
        A retry publishes the entry again as it was; a value here replaces the stored one (the
        labels, the flow-control settings), sets the header (content type), or delays the retry.
      </p>
      <form
        class="form-grid"
        aria-label="Retry overrides"
        onInput={(event) => {
          const form = new FormData(event.currentTarget);
          const next: Overrides = {};
          for (const [name] of OVERRIDES) next[name] = formRaw(form, name);
          props.onChange(next);
        }}
        onSubmit={(event) => event.preventDefault()}
      >
        {OVERRIDES.map(([name, label]) =>
          name === 'Method' ? (
            <Field key={name} label={label}>
              <select name={name} value={props.value[name] ?? ''}>
                <option value="">as stored</option>
                {['POST', 'GET', 'PUT', 'PATCH', 'DELETE'].map((m) => (
                  <option key={m}>{m}</option>
                ))}
              </select>
            </Field>
          ) : (
            <Field key={name} label={label}>
              <input name={name} value={props.value[name] ?? ''} spellcheck={false} />
            </Field>
          ),
        )}
      </form>
    </details>
  );
}

function useDlqActions() {
  const client = useQueryClient();
  const done = (): Promise<void> => client.invalidateQueries({ queryKey: ['dlq'] });
  const retry = useMutation({
    mutationFn: async ({ ids, overrides }: { ids: string[]; overrides: Overrides }) => {
      const { headers, query } = await overrideRequest(overrides);
      if (ids.length === 1) {
        const one = await request<RetryOne>(`/v2/dlq/retry/${segment(ids[0] ?? '', 'DLQ entry')}`, {
          method: 'POST',
          headers,
          query,
        });
        return [one.messageId];
      }
      const many = await request<RetryMany>('/v2/dlq/retry', {
        method: 'POST',
        query: { ...query, dlqIds: ids },
        headers,
      });
      return many.responses.map((r) => r.messageId);
    },
    onSuccess: done,
  });
  const remove = useMutation({
    mutationFn: (ids: string[]) =>
      ids.length === 1
        ? request(`/v2/dlq/${segment(ids[0] ?? '', 'DLQ entry')}`, { method: 'DELETE' }).then(
            () => 1,
          )
        : request<{ deleted: number }>('/v2/dlq', {
            method: 'DELETE',
            query: { dlqIds: ids },
          }).then((r) => r.deleted),
    onSuccess: done,
  });
  return { retry, remove };
}

function RetryResult(props: { messageIds: string[] }) {
  return (
    <Notice>
      Retried as{' '}
      {props.messageIds.map((id, i) => (
        <span key={id}>
          {i > 0 && ', '}
          <Link href={`/logs/${encodeURIComponent(id)}`}>{id}</Link>
        </span>
      ))}
      .
    </Notice>
  );
}

export function DlqPage() {
  const [params, setParams] = useUrlQuery();
  const query = toQuery(params, FILTERS);
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [overrides, setOverrides] = useState<Overrides>({});
  const list = useQuery({
    queryKey: ['dlq', query],
    queryFn: () => request<DlqList>('/v2/dlq', { query: { ...query, count: 50 } }),
  });
  const { retry, remove } = useDlqActions();
  const ids = [...selected];
  const current = Object.fromEntries(params.entries());
  const toggle = (id: string): void => {
    const next = new Set(selected);
    if (next.has(id)) next.delete(id);
    else next.add(id);
    setSelected(next);
  };
  return (
    <section>
      <PageHeader title="DLQ">
        <button
          type="button"
          disabled={ids.length === 0 || retry.isPending}
          onClick={() =>
            retry.mutate({ ids, overrides }, { onSuccess: () => setSelected(new Set()) })
          }
        >
          Retry selected
        </button>
        <ConfirmButton
          label="Delete selected"
          question={`Delete ${ids.length} ${ids.length === 1 ? 'entry' : 'entries'}?`}
          confirmLabel="Yes, delete"
          disabled={ids.length === 0}
          onConfirm={() => remove.mutate(ids, { onSuccess: () => setSelected(new Set()) })}
        />
      </PageHeader>
      {retry.isSuccess && <RetryResult messageIds={retry.data} />}
      {retry.isError && <ErrorBox error={retry.error} what="retry" />}
      {remove.isSuccess && <Notice>Deleted {remove.data}.</Notice>}
      <RetryOverrides value={overrides} onChange={setOverrides} />
      {remove.isError && <ErrorBox error={remove.error} what="delete" />}
      <FilterForm label="DLQ filters" params={params} onApply={setParams}>
        <Field label="Message id">
          <input name="messageId" defaultValue={params.get('messageId') ?? ''} />
        </Field>
        <Field label="URL">
          <input name="url" defaultValue={params.get('url') ?? ''} />
        </Field>
        <Field label="URL group">
          <input name="topicName" defaultValue={params.get('topicName') ?? ''} />
        </Field>
        <Field label="Label">
          <input name="label" defaultValue={params.get('label') ?? ''} />
        </Field>
        <Field label="Response status">
          <input
            name="responseStatus"
            inputMode="numeric"
            defaultValue={params.get('responseStatus') ?? ''}
          />
        </Field>
      </FilterForm>
      {list.isPending ? (
        <Loading what="the DLQ" />
      ) : list.isError ? (
        <ErrorBox error={list.error} what="load the DLQ" />
      ) : list.data.messages.length === 0 ? (
        <Empty>The DLQ is empty{params.size > 0 ? ' for these filters' : ''}.</Empty>
      ) : (
        <>
          <div class="table-wrap">
            <table class="list" aria-label="DLQ entries">
              <thead>
                <tr>
                  <th scope="col">
                    <span class="sr-only">Selected</span>
                  </th>
                  <th scope="col">Failed at</th>
                  <th scope="col">Entry</th>
                  <th scope="col">URL</th>
                  <th scope="col">Labels</th>
                  <th scope="col">Status</th>
                </tr>
              </thead>
              <tbody>
                {list.data.messages.map((entry) => (
                  <tr key={entry.dlqId}>
                    <td>
                      <input
                        type="checkbox"
                        aria-label={`Select ${entry.dlqId}`}
                        checked={selected.has(entry.dlqId)}
                        onChange={() => toggle(entry.dlqId)}
                      />
                    </td>
                    <td class="nowrap">{formatTime(entry.dlqCreatedAt)}</td>
                    <td class="mono">
                      <Link href={`/dlq/${encodeURIComponent(entry.dlqId)}`}>{entry.dlqId}</Link>
                    </td>
                    <td class="mono clip" title={entry.url}>
                      {entry.url}
                    </td>
                    <td class="wrap">
                      <Labels labels={labelsOf(entry)} />
                    </td>
                    <td>{entry.responseStatus ?? 'no response'}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <Pager cursor={list.data.cursor} current={current} setParams={setParams} />
        </>
      )}
    </section>
  );
}

export function DlqEntryPage(props: { dlqId: string }) {
  const [, navigate] = useLocation();
  const entry = useQuery({
    queryKey: ['dlq', 'entry', props.dlqId],
    queryFn: () => request<DlqMessage>(`/v2/dlq/${segment(props.dlqId, 'DLQ entry')}`),
  });
  const { retry, remove } = useDlqActions();
  const [overrides, setOverrides] = useState<Overrides>({});
  return (
    <section>
      <PageHeader
        title={
          <>
            DLQ entry <bdi>{props.dlqId}</bdi>
          </>
        }
      >
        <Link href="/dlq">All DLQ entries</Link>
      </PageHeader>
      {retry.isSuccess && <RetryResult messageIds={retry.data} />}
      {retry.isError && <ErrorBox error={retry.error} what="retry" />}
      {remove.isError && <ErrorBox error={remove.error} what="delete" />}
      {entry.isPending ? (
        <Loading what="the entry" />
      ) : entry.isError ? (
        // A retry takes the entry out of the DLQ, so reading it again finds nothing.
        retry.isSuccess ? (
          <p>The entry left the DLQ with its retry.</p>
        ) : (
          <ErrorBox error={entry.error} what="load the entry" />
        )
      ) : (
        <>
          <div class="actions">
            <button
              type="button"
              disabled={retry.isPending || retry.isSuccess}
              onClick={() => retry.mutate({ ids: [props.dlqId], overrides })}
            >
              Retry
            </button>
            <ConfirmButton
              label="Delete"
              question="Delete this entry?"
              onConfirm={() => remove.mutate([props.dlqId], { onSuccess: () => navigate('/dlq') })}
            />
          </div>
          <RetryOverrides value={overrides} onChange={setOverrides} />
          <DlqDetail entry={entry.data} />
        </>
      )}
    </section>
  );
}

function DlqDetail(props: { entry: DlqMessage }) {
  const e = props.entry;
  return (
    <>
      <MessageFacts m={e} failedAt={e.dlqCreatedAt} />
      <h2>Last response</h2>
      {e.responseStatus === undefined ? (
        <p class="muted">No response: the last attempt timed out or could not connect.</p>
      ) : (
        <>
          <p>HTTP {e.responseStatus}</p>
          <h3>Headers</h3>
          <HeaderTable headers={e.responseHeader} label="Response headers" />
          <h3>Body</h3>
          <TextOrBase64Body
            text={e.responseBody}
            base64={e.responseBodyBase64}
            label="Response body"
          />
        </>
      )}
      <h2>Request</h2>
      <h3>Headers</h3>
      <HeaderTable headers={e.header} label="Request headers" />
      <h3>Body</h3>
      <TextOrBase64Body text={e.body} base64={e.bodyBase64} label="Request body" />
    </>
  );
}
