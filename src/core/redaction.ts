import { createHash } from 'node:crypto';
import { badRequest } from './errors.js';
import { HeaderMapBuilder, isValidHeaderName, quoteValue } from './headers.js';
import type { HeaderMap } from './types.js';

/**
 * `<P>-Redact-Fields`: which parts of a message Ferry never shows. The destination still gets
 * the real values; every API response, event and DLQ entry shows `REDACTED:<sha256 hex>` of the
 * value instead, so equal secrets can still be recognised without being readable.
 */
export interface Redaction {
  /** The body. */
  body?: true;
  /** Every header (`true`), or the headers named here (lower case). */
  headers?: true | string[];
}

/**
 * Parses `body, header, header[Authorization]` (`headers` is a synonym of `header`, as QStash's
 * API and SDK differ). Names inside brackets are header names; several entries combine.
 *
 * @returns undefined when the list is empty.
 * @throws FerryError 400 naming the entry that is none of these.
 */
export function parseRedactFields(text: string, field: string): Redaction | undefined {
  const redaction: Redaction = {};
  const named = new Set<string>();
  for (const raw of text.split(',')) {
    const part = raw.trim();
    if (part === '') continue;
    const lower = part.toLowerCase();
    if (lower === 'body') {
      redaction.body = true;
      continue;
    }
    if (lower === 'header' || lower === 'headers') {
      redaction.headers = true;
      continue;
    }
    const match = /^headers?\[(.*)\]$/i.exec(part);
    const name = match?.[1]?.trim();
    if (name === undefined || !isValidHeaderName(name)) {
      throw badRequest(
        `invalid ${field} ${quoteValue(text)}: unknown field ${quoteValue(part)} (use body, header or header[<Header-Name>])`,
      );
    }
    named.add(name.toLowerCase());
  }
  if (redaction.headers !== true && named.size > 0) redaction.headers = [...named];
  return redaction.body || redaction.headers ? redaction : undefined;
}

/** `REDACTED:<sha256 hex>` of a value (a header value's UTF-8 bytes, or body bytes). */
export function redactedText(value: string | Uint8Array): string {
  return `REDACTED:${createHash('sha256').update(value).digest('hex')}`;
}

/** `headers` with the values `redaction` covers replaced; the input is left as it is. */
export function redactHeaders(headers: HeaderMap, redaction: Redaction | undefined): HeaderMap {
  if (redaction?.headers === undefined) return headers;
  const out = new HeaderMapBuilder();
  for (const [name, values] of Object.entries(headers)) {
    const hide = coversHeader(redaction, name);
    out.set(name, hide ? values.map(redactedText) : values);
  }
  return out.build();
}

/** Whether `redaction` covers the header `name` (any case). */
export function coversHeader(redaction: Redaction | undefined, name: string): boolean {
  const which = redaction?.headers;
  return which === true || (which !== undefined && which.includes(name.toLowerCase()));
}

/**
 * A URL group's default headers as the API shows them. When they carry `<P>-Redact-Fields`, the
 * values of every default that ends up as a header of a message made from them are redacted as
 * that message's are: a plain default `X` and `<P>-Forward-X` (the destination's `X`), and
 * `<P>-Callback-Forward-X` and `<P>-Failure-Callback-Forward-X` (the callbacks' `X`, see
 * callbacks.ts). Ferry's own settings (`<P>-Retries`, `<P>-Callback`, `<P>-Redact-Fields`…) stay
 * readable: they are the group's configuration, shown like a schedule's fields. Names are kept as
 * stored. A `<P>-Redact-Fields` that no longer parses hides every header value (fails closed).
 */
export function redactGroupDefaults(headers: HeaderMap, prefix: string): HeaderMap {
  const ferry = `${prefix.toLowerCase()}-`;
  const entries = Object.entries(headers);
  const setting = entries.find(([name]) => name.toLowerCase() === `${ferry}redact-fields`);
  if (!setting) return headers;
  let redaction: Redaction | undefined;
  try {
    redaction = parseRedactFields(setting[1].join(', '), `${prefix}-Redact-Fields`);
  } catch {
    redaction = { headers: true };
  }
  const forwards = ['forward-', 'callback-forward-', 'failure-callback-forward-'].map(
    (p) => ferry + p,
  );
  /** The header a default becomes on a message, or undefined for one of Ferry's settings. */
  const target = (lower: string): string | undefined => {
    if (!lower.startsWith(ferry)) return lower;
    const forward = forwards.find((p) => lower.startsWith(p));
    return forward === undefined ? undefined : lower.slice(forward.length);
  };
  return Object.fromEntries(
    entries.map(([name, values]): [string, string[]] => {
      const header = target(name.toLowerCase());
      const hide = header !== undefined && coversHeader(redaction, header);
      return [name, hide ? values.map(redactedText) : values];
    }),
  );
}
