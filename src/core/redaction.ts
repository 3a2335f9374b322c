import { createHash } from 'node:crypto';
import { badRequest } from './errors.js';
import { isValidHeaderName, quoteValue, setHeader } from './headers.js';
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
  const which = redaction?.headers;
  if (which === undefined) return headers;
  const out: HeaderMap = {};
  for (const [name, values] of Object.entries(headers)) {
    const hide = which === true || which.includes(name.toLowerCase());
    setHeader(out, name, hide ? values.map(redactedText) : values);
  }
  return out;
}
