/**
 * Publish a message through the public API (`POST /v2/publish/{destination}` with the
 * `<prefix>-*` headers), and link each answered message id to its page in Logs.
 */
import { useMutation } from '@tanstack/preact-query';
import { useState } from 'preact/hooks';
import { Link } from 'wouter-preact';
import { request } from '../api';
import { DestinationFields, ErrorBox, Field, Notice, PageHeader } from '../components';
import { formRaw, formText } from '../forms';
import { addHeader, addSetting, checkHeaderName, outgoing } from '../outgoing';
import { segment } from '../paths';
import { prefixed } from '../settings';

interface Published {
  messageId: string;
  url?: string;
  deduplicated?: boolean;
}

interface HeaderRow {
  key: number;
  name: string;
  value: string;
}

/** Form fields sent as `<prefix>-<Header>` when filled in. */
const OPTIONS = [
  ['delay', 'Delay'],
  ['retries', 'Retries'],
  ['callback', 'Callback'],
  ['failureCallback', 'Failure-Callback'],
  ['label', 'Label'],
  ['flowControlKey', 'Flow-Control-Key'],
] as const;

/** `parallelism=2, rate=10, period=1s` from the filled-in parts, or '' when none is. */
function flowControlValue(form: FormData): string {
  return ['parallelism', 'rate', 'period']
    .map((name) => [name, formText(form, name)])
    .filter(([, value]) => value)
    .map(([name, value]) => `${name}=${value}`)
    .join(', ');
}

async function publish(form: FormData, rows: HeaderRow[]): Promise<Published[]> {
  const destination = formText(form, 'destination');
  if (!destination) throw new Error('Enter a destination URL or URL group name.');
  // Settings a header cannot carry go as query parameters; plain headers are checked before
  // sending (outgoing.ts).
  const out = outgoing();
  addSetting(out, await prefixed('Method'), formText(form, 'method') || 'POST');
  const contentType = formText(form, 'contentType');
  if (contentType) addHeader(out, 'content-type', contentType, 'Content type');
  for (const [field, header] of OPTIONS) {
    const value = formText(form, field);
    if (value) addSetting(out, await prefixed(header), value);
  }
  const flow = flowControlValue(form);
  if (flow) addSetting(out, await prefixed('Flow-Control-Value'), flow);
  for (const [i, row] of rows.entries()) {
    const name = row.name.trim();
    if (!name) continue;
    checkHeaderName(name, `Header ${i + 1} name`);
    addHeader(out, await prefixed(`Forward-${name}`), row.value, `Header ${i + 1} value`);
  }
  // Percent-encoded whole, so the destination's own query string stays the destination's.
  const answer = await request<Published | Published[]>(
    `/v2/publish/${segment(destination, 'Destination')}`,
    { method: 'POST', headers: out.headers, query: out.query, body: formRaw(form, 'body') },
  );
  return Array.isArray(answer) ? answer : [answer];
}

function PublishResult(props: { messages: Published[] }) {
  return (
    <Notice>
      Published:{' '}
      {props.messages.map((m, i) => (
        <span key={m.messageId}>
          {i > 0 && ', '}
          <Link href={`/logs/${encodeURIComponent(m.messageId)}`}>{m.messageId}</Link>
          {m.url && (
            <>
              {' ('}
              <bdi>{m.url}</bdi>)
            </>
          )}
          {m.deduplicated ? ' (duplicate: nothing new stored)' : ''}
        </span>
      ))}
      .
    </Notice>
  );
}

function HeaderRows(props: { rows: HeaderRow[]; onChange: (rows: HeaderRow[]) => void }) {
  const { rows, onChange } = props;
  const update = (key: number, change: Partial<HeaderRow>): void =>
    onChange(rows.map((r) => (r.key === key ? { ...r, ...change } : r)));
  return (
    <fieldset class="wide">
      <legend>Headers delivered with the message</legend>
      {rows.map((row, i) => (
        <div key={row.key} class="header-row">
          <input
            aria-label={`Header ${i + 1} name`}
            placeholder="Name"
            value={row.name}
            onInput={(e) => update(row.key, { name: e.currentTarget.value })}
          />
          <input
            aria-label={`Header ${i + 1} value`}
            placeholder="Value"
            value={row.value}
            onInput={(e) => update(row.key, { value: e.currentTarget.value })}
          />
          <button
            type="button"
            aria-label={`Remove header ${i + 1}`}
            onClick={() => onChange(rows.filter((r) => r.key !== row.key))}
          >
            Remove
          </button>
        </div>
      ))}
      <button
        type="button"
        onClick={() =>
          onChange([
            ...rows,
            { key: Math.max(0, ...rows.map((r) => r.key)) + 1, name: '', value: '' },
          ])
        }
      >
        Add header
      </button>
    </fieldset>
  );
}

export function PublishPage() {
  const [rows, setRows] = useState<HeaderRow[]>([]);
  const send = useMutation({ mutationFn: (form: FormData) => publish(form, rows) });
  return (
    <section>
      <PageHeader title="Publish" />
      <form
        aria-label="Publish a message"
        class="form-grid"
        onSubmit={(event) => {
          event.preventDefault();
          send.mutate(new FormData(event.currentTarget));
        }}
      >
        <DestinationFields />
        <Field label="Content type">
          <input name="contentType" placeholder="none" />
        </Field>
        <Field label="Delay">
          <input name="delay" placeholder="10s, 1h30m" />
        </Field>
        <Field label="Retries">
          <input name="retries" inputMode="numeric" placeholder="plan default" />
        </Field>
        <Field label="Label">
          <input name="label" placeholder="comma-separated" />
        </Field>
        <Field label="Callback URL">
          <input name="callback" />
        </Field>
        <Field label="Failure callback URL">
          <input name="failureCallback" />
        </Field>
        <Field label="Flow-control key">
          <input name="flowControlKey" />
        </Field>
        <Field label="Parallelism">
          <input name="parallelism" inputMode="numeric" />
        </Field>
        <Field label="Rate">
          <input name="rate" inputMode="numeric" />
        </Field>
        <Field label="Rate period">
          <input name="period" placeholder="1s" />
        </Field>
        <HeaderRows rows={rows} onChange={setRows} />
        <Field label="Body" wide>
          <textarea name="body" rows={5} />
        </Field>
        <div class="wide">
          <button type="submit" disabled={send.isPending}>
            Publish
          </button>
        </div>
      </form>
      {send.isSuccess && <PublishResult messages={send.data} />}
      {send.isError && <ErrorBox error={send.error} what="publish" />}
    </section>
  );
}
