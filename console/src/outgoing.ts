/**
 * The headers and settings a form sends (Publish, New schedule, DLQ retry overrides).
 *
 * A browser sends header values as Latin-1: `fetch` refuses a value holding a character above
 * U+00FF before sending anything, which the console used to report as "Ferry did not answer".
 * Every `<prefix>-*` setting also has a query-parameter form (`svc-label=…`, docs/api.md "Query-
 * parameter forms"), which carries any character percent-encoded as UTF-8, so a setting that a
 * header cannot carry goes there. A plain header (Content-Type, a forwarded header's value) has
 * no such form, and Ferry refuses a character above U+00FF in one anyway (it is delivered as a
 * header): the form says so, naming the field, before anything is sent.
 */

export interface Outgoing {
  headers: Record<string, string>;
  /** Settings in their query-parameter form, named in lower case (`svc-label`). */
  query: Record<string, string>;
}

export const outgoing = (): Outgoing => ({ headers: {}, query: {} });

/** The first character of `value` that a header cannot carry (above U+00FF), if any. */
export function beyondLatin1(value: string): string | undefined {
  for (const c of value) if ((c.codePointAt(0) ?? 0) > 0xff) return c;
  return undefined;
}

/** An HTTP header name: a token (RFC 9110). */
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** `U+65E5 "日"`, for messages. */
const described = (c: string): string =>
  `U+${(c.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')} "${c}"`;

/**
 * Adds a `<prefix>-*` setting (`Svc-Label`): as a header, or as its query parameter when the
 * value holds a character a header cannot carry.
 */
export function addSetting(out: Outgoing, name: string, value: string): void {
  if (beyondLatin1(value) === undefined) out.headers[name] = value;
  else out.query[name.toLowerCase()] = value;
}

/**
 * Checks a header name the user typed (`fetch` refuses others before sending).
 * @throws Error naming `field`.
 */
export function checkHeaderName(name: string, field: string): void {
  if (!TOKEN.test(name)) {
    throw new Error(
      `${field} "${name}" is not a header name: use letters, digits and ! # $ % & ' * + - . ^ _ \` | ~ only.`,
    );
  }
}

/**
 * Adds a header that has no query form (Content-Type, `<prefix>-Forward-<Name>`).
 * @param field the form field the value comes from (`Content type`, `Header 1 value`).
 * @throws Error naming the field and the character, before anything is sent.
 */
export function addHeader(out: Outgoing, name: string, value: string, field: string): void {
  const c = beyondLatin1(value);
  if (c !== undefined) {
    throw new Error(
      `${field} holds ${described(c)}: a header value can only carry characters up to U+00FF ` +
        '(Latin-1). Percent-encode it, or send it in the body.',
    );
  }
  out.headers[name] = value;
}
