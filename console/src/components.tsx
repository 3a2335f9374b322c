/**
 * Building blocks every page uses: loading, empty and error states, header and body views,
 * confirmations. Untrusted data (bodies, headers, labels, URLs) is only ever passed as text
 * children, which Preact writes as text nodes; nothing here parses markup.
 *
 * Untrusted text shown among the console's own words sits in a `<bdi>` (or a block of its own):
 * a bidi control in it (U+202E RIGHT-TO-LEFT OVERRIDE, an unclosed embedding) then reorders at
 * most itself, never the words around it ("key: paused." cannot read "key .desuap :").
 */
import { Fragment, type ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { Link } from 'wouter-preact';
import { ApiError } from './api';
import { decodeBase64Body, formatTime, prettyText, type DecodedBody } from './format';
import { unaddressable } from './paths';

/**
 * A sentence naming untrusted values (`phrase\`Delete schedule ${id}?\``): `text` for an
 * accessible name, `view` for the page, with each value in a `<bdi>`.
 */
export interface Phrase {
  text: string;
  view: ComponentChildren;
}

export function phrase(strings: TemplateStringsArray, ...values: (string | number)[]): Phrase {
  return {
    text: strings.reduce((text, part, i) => `${text}${String(values[i - 1])}${part}`),
    view: strings.map((part, i) => (
      <Fragment key={i}>
        {part}
        {i < values.length && <bdi>{values[i]}</bdi>}
      </Fragment>
    )),
  };
}

/** A message's labels, each isolated from the others and from the page. */
export function Labels(props: { labels: string[] }) {
  return (
    <>
      {props.labels.map((label, i) => (
        <Fragment key={i}>
          {i > 0 && ', '}
          <bdi>{label}</bdi>
        </Fragment>
      ))}
    </>
  );
}

/**
 * Ferry's error text with each quoted value (`invalid Svc-Label "…": …`; values are quoted as
 * JSON strings) isolated from the words around it.
 */
function isolateQuoted(text: string): ComponentChildren {
  return text
    .split(/("(?:[^"\\]|\\.)*")/)
    .map((part, i) => (i % 2 === 1 ? <bdi key={i}>{part}</bdi> : part));
}

export function PageHeader(props: { title: ComponentChildren; children?: ComponentChildren }) {
  return (
    <header class="page-header">
      <h1>{props.title}</h1>
      <div class="page-actions">{props.children}</div>
    </header>
  );
}

export function Loading(props: { what: string }) {
  return (
    <p class="state loading" role="status">
      Loading {props.what}…
    </p>
  );
}

export function Empty(props: { children: ComponentChildren }) {
  return <p class="state empty">{props.children}</p>;
}

export function ErrorBox(props: { error: unknown; what?: string }) {
  const error = props.error;
  const detail =
    error instanceof ApiError
      ? error.status
        ? `Ferry answered ${error.status}: ${error.message}`
        : error.message
      : String((error as Error)?.message ?? error);
  return (
    <p class="state error" role="alert">
      {props.what ? `Could not ${props.what}. ` : ''}
      {isolateQuoted(detail)}
    </p>
  );
}

/**
 * Header rows shown before "Show all": a publisher or a destination may send thousands (a batch
 * entry may forward any number), and a page built 10,000 rows before it could be used.
 */
const SHOWN_HEADERS = 100;

/** A `{Name: [values]}` map as a two-column table, the first {@link SHOWN_HEADERS} rows at first. */
export function HeaderTable(props: { headers?: Record<string, string[]>; label: string }) {
  const [all, setAll] = useState(false);
  const rows = Object.entries(props.headers ?? {}).flatMap(([name, values]) =>
    values.map((value, i) => ({ key: `${name}-${i}`, name, value })),
  );
  if (rows.length === 0) return <p class="muted">No headers.</p>;
  const shown = all ? rows : rows.slice(0, SHOWN_HEADERS);
  const count = rows.length.toLocaleString('en-US');
  return (
    <>
      <table class="kv" aria-label={props.label}>
        <tbody>
          {shown.map((row) => (
            <tr key={row.key}>
              <th scope="row">
                <bdi>{row.name}</bdi>
              </th>
              <td class="mono">
                <bdi>{row.value}</bdi>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {shown.length < rows.length && (
        <p class="muted">
          Showing the first {SHOWN_HEADERS} of {count} headers.{' '}
          <button
            type="button"
            aria-label={`Show all ${count} ${props.label.toLowerCase()}`}
            onClick={() => setAll(true)}
          >
            Show all {count}
          </button>
        </p>
      )}
    </>
  );
}

function DecodedView(props: { body: DecodedBody; label: string }) {
  const body = props.body;
  if (body.kind === 'empty') return <p class="muted">Empty body.</p>;
  if (body.kind === 'text') {
    return (
      <pre class="body" aria-label={props.label}>
        {prettyText(body.text)}
      </pre>
    );
  }
  return (
    <div aria-label={props.label}>
      <p class="muted">Binary body, {body.size} bytes. Base64:</p>
      <pre class="body">{body.base64}</pre>
      <p class="muted">Hex (first 4 KiB):</p>
      <pre class="body">{body.hex}</pre>
    </div>
  );
}

/** A body carried as base64 (events), decoded for display. */
export function Base64Body(props: { base64?: string; label: string }) {
  return <DecodedView body={decodeBase64Body(props.base64)} label={props.label} />;
}

/** A body carried as text, or as base64 when it is not UTF-8 (messages, DLQ entries). */
export function TextOrBase64Body(props: { text?: string; base64?: string; label: string }) {
  const body: DecodedBody =
    props.text !== undefined
      ? props.text === ''
        ? { kind: 'empty' }
        : { kind: 'text', text: props.text }
      : decodeBase64Body(props.base64);
  return <DecodedView body={body} label={props.label} />;
}

/**
 * A destructive action asks once, inline, saying what it will do: no `window.confirm`, which
 * blocks the page and cannot be styled or read by assistive tools in context.
 */
export function ConfirmButton(props: {
  label: string;
  /** A `Phrase` when it names untrusted values. */
  question: string | Phrase;
  confirmLabel?: string;
  onConfirm: () => void;
  disabled?: boolean;
  /** The button's accessible name when its label alone is ambiguous (one per table row). */
  name?: string;
  /** Why the action is off: turns it off, and describes the button (see `ActionsOff`). */
  off?: { id: string; reason: string };
}) {
  const [asking, setAsking] = useState(false);
  if (!asking) {
    return (
      <button
        type="button"
        class="danger"
        aria-label={props.name}
        aria-describedby={props.off?.id}
        title={props.off?.reason}
        disabled={props.disabled || props.off !== undefined}
        onClick={() => setAsking(true)}
      >
        {props.label}
      </button>
    );
  }
  const question = typeof props.question === 'string' ? props.question : props.question.text;
  return (
    <span class="confirm" role="group" aria-label={question}>
      <span>{typeof props.question === 'string' ? props.question : props.question.view}</span>
      <button
        type="button"
        class="danger"
        onClick={() => {
          setAsking(false);
          props.onConfirm();
        }}
      >
        {props.confirmLabel ?? `Yes, ${props.label.toLowerCase()}`}
      </button>
      <button type="button" onClick={() => setAsking(false)}>
        Cancel
      </button>
    </span>
  );
}

/**
 * A row's Pause or Resume button (queues, schedules, flow-control keys), its accessible name
 * saying which row (`Pause queue orders`), off with the row's other actions (`off`).
 */
export function PauseButton(props: {
  paused: boolean;
  /** What the row is, as its name says it: `queue orders`. */
  name: string;
  off?: { id: string; reason: string };
  disabled?: boolean;
  onToggle: (action: 'pause' | 'resume') => void;
}) {
  const label = props.paused ? 'Resume' : 'Pause';
  return (
    <button
      type="button"
      aria-label={`${label} ${props.name}`}
      aria-describedby={props.off?.id}
      title={props.off?.reason}
      disabled={props.disabled || props.off !== undefined}
      onClick={() => props.onToggle(props.paused ? 'resume' : 'pause')}
    >
      {label}
    </button>
  );
}

/**
 * The reason a row's actions are off (its name cannot go into a URL path, see paths.ts), shown
 * in the row and referenced by the buttons' `aria-describedby`.
 */
export function ActionsOff(props: { off: { id: string; reason: string } }) {
  return (
    <span id={props.off.id} class="row-note">
      {props.off.reason}
    </span>
  );
}

/**
 * `off` for a row named `name` in the table `table`: undefined when the name can go into a URL
 * path; else the reason and an id for it that is unique on the page (only `.` and `..` are
 * refused, so the table and the name's length suffice).
 */
export function actionsOff(
  table: string,
  name: string,
): { id: string; reason: string } | undefined {
  const reason = unaddressable(name);
  return reason === undefined ? undefined : { id: `off-${table}-${name.length}`, reason };
}

/**
 * Cursor paging of a list whose filters live in the URL: "Next page" puts the cursor the API
 * returned into the URL, "First page" takes it out (the API pages newest first).
 */
export function Pager(props: {
  cursor?: string;
  current: Record<string, string | undefined>;
  setParams: (next: Record<string, string | undefined>) => void;
}) {
  const { cursor, current, setParams } = props;
  return (
    <nav class="pager" aria-label="Pages">
      {current.cursor && (
        <button type="button" onClick={() => setParams({ ...current, cursor: undefined })}>
          First page
        </button>
      )}
      {cursor ? (
        <button type="button" onClick={() => setParams({ ...current, cursor })}>
          Next page
        </button>
      ) : (
        <span class="muted">End of the list.</span>
      )}
    </nav>
  );
}

/** A message's labels: `labels`, or the single `label` older answers carry. */
export function labelsOf(item: { labels?: string[]; label?: string }): string[] {
  return item.labels ?? (item.label ? [item.label] : []);
}

/** A labelled form field; the label is the control's accessible name. */
export function Field(props: { label: string; children: ComponentChildren; wide?: boolean }) {
  return (
    <label class={props.wide ? 'field wide' : 'field'}>
      <span>{props.label}</span>
      {props.children}
    </label>
  );
}

/** A one-line result of an action: what was done, or why it failed. */
export function Notice(props: { children: ComponentChildren; kind?: 'ok' | 'error' }) {
  return (
    <p class={`notice ${props.kind ?? 'ok'}`} role={props.kind === 'error' ? 'alert' : 'status'}>
      {props.children}
    </p>
  );
}

const METHODS = ['POST', 'GET', 'PUT', 'PATCH', 'DELETE'] as const;

/** The destination and method fields that every "send something" form starts with. */
export function DestinationFields() {
  return (
    <>
      <Field label="Destination" wide>
        <input name="destination" placeholder="https://example.com/hook or a URL group name" />
      </Field>
      <Field label="Method">
        <select name="method">
          {METHODS.map((m) => (
            <option key={m}>{m}</option>
          ))}
        </select>
      </Field>
    </>
  );
}

/** The facts a DLQ entry and a waiting message share (`due` only for a waiting one). */
export function MessageFacts(props: {
  m: {
    messageId: string;
    method: string;
    url: string;
    createdAt: number;
    retried: number;
    maxRetries: number;
    labels?: string[];
  };
  /** The message's `notBefore`: when its first attempt was or is due. */
  notBefore?: number;
  /** When a DLQ entry's last attempt failed (it entered the DLQ). */
  failedAt?: number;
}) {
  const m = props.m;
  return (
    <dl class="facts">
      <dt>Message</dt>
      <dd class="mono">
        <Link href={`/logs/${encodeURIComponent(m.messageId)}`}>{m.messageId}</Link>
      </dd>
      <dt>Destination</dt>
      <dd class="mono">
        {m.method} <bdi>{m.url}</bdi>
      </dd>
      {props.notBefore !== undefined && (
        <>
          <dt>Not before</dt>
          <dd>{formatTime(props.notBefore)}</dd>
        </>
      )}
      <dt>Created</dt>
      <dd>{formatTime(m.createdAt)}</dd>
      {props.failedAt !== undefined && (
        <>
          <dt>Failed at</dt>
          <dd>{formatTime(props.failedAt)}</dd>
        </>
      )}
      <dt>Retries</dt>
      <dd>
        {m.retried} of {m.maxRetries}
      </dd>
      {(m.labels ?? []).length > 0 && (
        <>
          <dt>Labels</dt>
          <dd>
            <Labels labels={m.labels ?? []} />
          </dd>
        </>
      )}
    </dl>
  );
}
