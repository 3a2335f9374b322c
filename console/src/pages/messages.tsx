/**
 * Messages that are not final yet. The API has no list of waiting messages (only the events
 * log, which also holds final ones), so this page looks one up by id (`GET /v2/messages/{id}`)
 * and cancels it, and cancels by filter (`DELETE /v2/messages?…`).
 */
import { useMutation, useQuery, useQueryClient } from '@tanstack/preact-query';
import { useState } from 'preact/hooks';
import { Link } from 'wouter-preact';
import { ApiError, request, type Query } from '../api';
import {
  ConfirmButton,
  ErrorBox,
  Field,
  HeaderTable,
  Loading,
  MessageFacts,
  Notice,
  PageHeader,
  TextOrBase64Body,
} from '../components';
import { FilterForm, useUrlQuery } from '../filters';
import { formText } from '../forms';
import type { Message } from '../types';

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

function MessageView(props: { messageId: string }) {
  const client = useQueryClient();
  const message = useQuery({
    queryKey: ['message', props.messageId],
    queryFn: () => request<Message>(`/v2/messages/${encodeURIComponent(props.messageId)}`),
  });
  const cancel = useMutation({
    mutationFn: () =>
      request(`/v2/messages/${encodeURIComponent(props.messageId)}`, { method: 'DELETE' }),
    onSuccess: () => client.invalidateQueries({ queryKey: ['message', props.messageId] }),
  });
  const log = <Link href={`/logs/${encodeURIComponent(props.messageId)}`}>its log</Link>;
  if (cancel.isSuccess) {
    return (
      <Notice>
        Cancelled {props.messageId}; see {log}.
      </Notice>
    );
  }
  if (message.isPending) return <Loading what="the message" />;
  if (message.isError) {
    return message.error instanceof ApiError && message.error.status === 404 ? (
      <p class="state empty">
        {props.messageId} is not waiting: it does not exist or is final already (delivered, failed
        or cancelled); see {log}.
      </p>
    ) : (
      <ErrorBox error={message.error} what="load the message" />
    );
  }
  const m = message.data;
  return (
    <article aria-label={`Message ${m.messageId}`}>
      <MessageFacts m={m} due={m.notBefore} />
      <ConfirmButton
        label="Cancel message"
        question={`Cancel message ${m.messageId}?`}
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
  const cancel = useMutation({
    mutationFn: (query: Query) =>
      request<{ cancelled: number }>('/v2/messages', { method: 'DELETE', query }),
    onSuccess: () => {
      setFilters({});
      setFormKey(formKey + 1);
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
              never sends that. It has no count of the matches either, so the question names
              the filters and the answer names how many were cancelled. */}
          <ConfirmButton
            label="Cancel matching messages"
            question={`Cancel every waiting message with ${named.join(' and ')}?`}
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
        retry. Ferry's API reads them one at a time by id (the ids are in Publish's answer and in
        Logs); it has no list of them.
      </p>
      <FilterForm label="Find a message" params={params} onApply={setParams}>
        <Field label="Message id">
          <input name="messageId" defaultValue={messageId} />
        </Field>
      </FilterForm>
      {messageId && <MessageView key={messageId} messageId={messageId} />}
      <CancelByFilter />
    </section>
  );
}
