/**
 * Messages that are not final yet: the list (`GET /v2/messages?…`, newest first, filters in the
 * URL, cursor paged), one message by id (`GET /v2/messages/{id}`) with its cancel, and cancel by
 * filter (`DELETE /v2/messages?…`), whose confirmation names how many messages match.
 */
import { useMutation, useQuery, useQueryClient } from '@tanstack/preact-query';
import { Fragment } from 'preact';
import { useState } from 'preact/hooks';
import { Link } from 'wouter-preact';
import { ApiError, request, type Query } from '../api';
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
  phrase,
  TextOrBase64Body,
} from '../components';
import { FilterForm, toQuery, useUrlQuery } from '../filters';
import { formatTime } from '../format';
import { formText } from '../forms';
import { segment } from '../paths';
import type { EventPage, Message } from '../types';

interface MessagePage {
  cursor?: string;
  messages: Message[];
}

/**
 * Where a message stands now, in words (the API's `state`): being delivered, delayed until its
 * due time, due and waiting for a delivery slot, or held by its queue or flow-control key (names
 * from messages are untrusted: each in a `bdi` of its own).
 */
function MessageState(props: { m: Message }) {
  const m = props.m;
  switch (m.state) {
    case 'ACTIVE':
      return <>Being delivered</>;
    case 'DELAYED':
      return m.nextDeliveryTime === undefined ? (
        <>Delayed</>
      ) : (
        <>Delayed until {formatTime(m.nextDeliveryTime)}</>
      );
    case 'DUE':
      return <>Due, waiting for a delivery slot</>;
    case 'WAITING':
      if (m.queueName !== undefined) {
        return (
          <>
            Waiting its turn in queue <bdi>{m.queueName}</bdi>
          </>
        );
      }
      return m.flowControlKey === undefined ? (
        <>Waiting</>
      ) : (
        <>
          Waiting for flow-control key <bdi>{m.flowControlKey}</bdi>
        </>
      );
    default:
      return null;
  }
}

/** The list's filters (the URL's names are the API's). */
const LIST_FILTERS = [
  'messageId',
  'label',
  'url',
  'host',
  'path',
  'flowControlKey',
  'queueName',
  'scheduleId',
  'state',
  'cursor',
] as const;

/** The list's state filter: the API's `state` values and their names in the State column. */
const STATE_CHOICES = [
  ['ACTIVE', 'Being delivered'],
  ['DELAYED', 'Delayed'],
  ['DUE', 'Due'],
  ['WAITING', 'Waiting (flow control, queue)'],
] as const;

/** Counting the matches of a bulk cancel stops here (pages of 100 ids, no bodies). */
const COUNT_LIMIT = 1_000;

async function countMatches(query: Query): Promise<number> {
  let total = 0;
  let cursor: string | undefined;
  do {
    const page = await request<MessagePage>('/v2/messages', {
      query: { ...query, cursor, count: 100, bodyCut: 0 },
    });
    total += page.messages.length;
    cursor = page.cursor;
  } while (cursor && total < COUNT_LIMIT);
  return total;
}

function MessageList(props: {
  params: URLSearchParams;
  setParams: (next: Record<string, string | undefined>) => void;
}) {
  const query = toQuery(props.params, LIST_FILTERS);
  const list = useQuery({
    queryKey: ['messages', 'list', query],
    queryFn: () => request<MessagePage>('/v2/messages', { query: { ...query, count: 50 } }),
  });
  const current = Object.fromEntries(props.params.entries());
  if (list.isPending) return <Loading what="waiting messages" />;
  if (list.isError) return <ErrorBox error={list.error} what="load the waiting messages" />;
  if (list.data.messages.length === 0) {
    return (
      <Empty>
        No message is waiting{props.params.size > 0 ? ' for these filters' : ''}: every message is
        delivered, failed or cancelled (see Logs).
      </Empty>
    );
  }
  return (
    <>
      <div class="table-wrap">
        <table class="list" aria-label="Waiting messages">
          <thead>
            <tr>
              <th scope="col">Created</th>
              <th scope="col">Message</th>
              <th scope="col">Destination</th>
              <th scope="col">State</th>
              <th scope="col" class="num">
                Retried
              </th>
              <th scope="col">Labels</th>
            </tr>
          </thead>
          <tbody>
            {list.data.messages.map((m) => (
              <tr key={m.messageId}>
                <td class="nowrap">{formatTime(m.createdAt)}</td>
                <td class="mono">
                  <a
                    href={`?messageId=${encodeURIComponent(m.messageId)}`}
                    onClick={(event) => {
                      event.preventDefault();
                      props.setParams({ messageId: m.messageId });
                    }}
                  >
                    {m.messageId}
                  </a>
                </td>
                <td class="mono clip" title={`${m.method} ${m.url}`}>
                  {m.method} {m.url}
                </td>
                <td>
                  <MessageState m={m} />
                </td>
                <td class="num">
                  {m.retried} of {m.maxRetries}
                </td>
                <td class="wrap">
                  <Labels labels={labelsOf(m)} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <Pager cursor={list.data.cursor} current={current} setParams={props.setParams} />
    </>
  );
}

/** Bulk-cancel filters: form field, label, API parameter. */
const CANCEL_FILTERS = [
  ['label', 'Label'],
  ['url', 'URL'],
  ['host', 'Host'],
  ['path', 'Path'],
  ['flowControlKey', 'Flow-control key'],
  ['queueName', 'Queue'],
  ['scheduleId', 'Schedule'],
] as const;

/**
 * Why a message is waiting for a retry, and until when: its last failed attempt and the time
 * that attempt scheduled the retry for (flow control or a paced destination can hold it longer).
 */
function LastFailure(props: { events: EventPage['events'] }) {
  const error = props.events.find((e) => e.state === 'ERROR');
  const retry = props.events.find((e) => e.state === 'RETRY');
  if (!error && !retry) return null;
  return (
    <dl class="facts" aria-label="Last failed attempt">
      {error && (
        <>
          <dt>Last attempt failed</dt>
          <dd>
            {formatTime(error.time)}: <bdi>{error.error ?? `HTTP ${error.responseStatus}`}</bdi>
          </dd>
        </>
      )}
      {retry?.nextDeliveryTime !== undefined && (
        <>
          <dt>Retry scheduled for</dt>
          <dd>{formatTime(retry.nextDeliveryTime)}</dd>
        </>
      )}
    </dl>
  );
}

function MessageView(props: { messageId: string }) {
  const client = useQueryClient();
  const message = useQuery({
    queryKey: ['message', props.messageId],
    queryFn: () => request<Message>(`/v2/messages/${segment(props.messageId, 'Message id')}`),
  });
  // A message waiting for a retry: its last failed attempt (ERROR) and the retry it scheduled
  // (RETRY), the newest two such events of its log.
  const retried = message.data?.retried ?? 0;
  const failures = useQuery({
    queryKey: ['message-failures', props.messageId, retried],
    enabled: retried > 0,
    queryFn: () =>
      request<EventPage>('/v2/events', {
        query: { messageId: props.messageId, state: ['ERROR', 'RETRY'], count: 2 },
      }),
  });
  const cancel = useMutation({
    mutationFn: () =>
      request(`/v2/messages/${segment(props.messageId, 'Message id')}`, { method: 'DELETE' }),
    onSuccess: () =>
      Promise.all([
        client.invalidateQueries({ queryKey: ['message', props.messageId] }),
        client.invalidateQueries({ queryKey: ['messages'] }),
      ]),
  });
  const log = <Link href={`/logs/${encodeURIComponent(props.messageId)}`}>its log</Link>;
  if (cancel.isSuccess) {
    return (
      <Notice>
        Cancelled <bdi>{props.messageId}</bdi>; see {log}.
      </Notice>
    );
  }
  if (message.isPending) return <Loading what="the message" />;
  if (message.isError) {
    return message.error instanceof ApiError && message.error.status === 404 ? (
      <p class="state empty">
        <bdi>{props.messageId}</bdi> is not waiting: it does not exist or is final already
        (delivered, failed or cancelled); see {log}.
      </p>
    ) : (
      <ErrorBox error={message.error} what="load the message" />
    );
  }
  const m = message.data;
  return (
    <article aria-label={`Message ${m.messageId}`}>
      <MessageFacts m={m} notBefore={m.notBefore} />
      {m.state !== undefined && (
        <dl class="facts" aria-label="State">
          <dt>State</dt>
          <dd>
            <MessageState m={m} />
          </dd>
        </dl>
      )}
      {failures.data && <LastFailure events={failures.data.events} />}
      <ConfirmButton
        label="Cancel message"
        question={phrase`Cancel message ${m.messageId}?`}
        confirmLabel="Yes, cancel it"
        onConfirm={() => cancel.mutate()}
      />
      {cancel.isError && <ErrorBox error={cancel.error} what="cancel the message" />}
      <h2>Headers</h2>
      <HeaderTable headers={m.header} label="Message headers" />
      <h2>Body</h2>
      <TextOrBase64Body text={m.body} base64={m.bodyBase64} label="Message body" />
    </article>
  );
}

function CancelByFilter() {
  const [filters, setFilters] = useState<Query>({});
  const [formKey, setFormKey] = useState(0);
  const named = Object.entries(filters).map(([name, value]) => `${name}=${String(value)}`);
  const client = useQueryClient();
  const matches = useQuery({
    queryKey: ['messages', 'count', filters],
    queryFn: () => countMatches(filters),
    enabled: named.length > 0,
  });
  const many =
    matches.data === undefined
      ? 'the waiting messages'
      : matches.data >= COUNT_LIMIT
        ? `more than ${COUNT_LIMIT.toLocaleString()} waiting messages`
        : `${matches.data} waiting ${matches.data === 1 ? 'message' : 'messages'}`;
  const cancel = useMutation({
    mutationFn: (query: Query) =>
      request<{ cancelled: number }>('/v2/messages', { method: 'DELETE', query }),
    onSuccess: () => {
      setFilters({});
      setFormKey(formKey + 1);
      return client.invalidateQueries({ queryKey: ['messages'] });
    },
  });
  return (
    <details class="panel">
      <summary>Cancel by filter</summary>
      <form
        key={formKey}
        aria-label="Cancel by filter"
        class="form-grid"
        onInput={(event) => {
          const form = new FormData(event.currentTarget);
          const next: Query = {};
          for (const [name] of CANCEL_FILTERS) next[name] = formText(form, name) || undefined;
          setFilters(Object.fromEntries(Object.entries(next).filter(([, v]) => v)));
        }}
        onSubmit={(event) => event.preventDefault()}
      >
        {CANCEL_FILTERS.map(([name, label]) => (
          <Field key={name} label={label}>
            <input name={name} />
          </Field>
        ))}
        <div class="wide">
          {/* The API cancels every pending message when no filter is given; the console
              never sends that. The question names the filters and how many messages match
              now (counted through the list); the answer how many were cancelled. */}
          <ConfirmButton
            label="Cancel matching messages"
            question={{
              text: `Cancel ${many} with ${named.join(' and ')}?`,
              view: (
                <>
                  Cancel {many} with{' '}
                  {named.map((filter, i) => (
                    <Fragment key={filter}>
                      {i > 0 && ' and '}
                      <bdi>{filter}</bdi>
                    </Fragment>
                  ))}
                  ?
                </>
              ),
            }}
            confirmLabel="Yes, cancel them"
            disabled={named.length === 0 || cancel.isPending}
            onConfirm={() => cancel.mutate(filters)}
          />
        </div>
      </form>
      {cancel.isSuccess && (
        <Notice>
          Cancelled {cancel.data.cancelled} {cancel.data.cancelled === 1 ? 'message' : 'messages'}.
        </Notice>
      )}
      {cancel.isError && <ErrorBox error={cancel.error} what="cancel" />}
    </details>
  );
}

export function MessagesPage() {
  const [params, setParams] = useUrlQuery();
  const messageId = params.get('messageId') ?? '';
  return (
    <section>
      <PageHeader title="Messages" />
      <p>
        Messages waiting for their first attempt (delayed or due), being delivered, or waiting for a
        retry, newest first. Delivered, failed and cancelled ones are in Logs.
      </p>
      <FilterForm label="Message filters" params={params} onApply={setParams}>
        <Field label="Message id">
          <input name="messageId" defaultValue={messageId} />
        </Field>
        {CANCEL_FILTERS.map(([name, label]) => (
          <Field key={name} label={label}>
            <input name={name} defaultValue={params.get(name) ?? ''} />
          </Field>
        ))}
        <Field label="State">
          <select name="state" defaultValue={params.get('state') ?? ''}>
            <option value="">Any</option>
            {STATE_CHOICES.map(([value, label]) => (
              <option key={value} value={value}>
                {label}
              </option>
            ))}
          </select>
        </Field>
      </FilterForm>
      {messageId && <MessageView key={messageId} messageId={messageId} />}
      <CancelByFilter />
      <MessageList params={params} setParams={setParams} />
    </section>
  );
}
