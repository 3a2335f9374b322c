import type { HeaderMap } from './types.js';

/**
 * Header helpers for `HeaderMap` (canonical name → values). Names are stored in Go's canonical
 * form (`Content-Type`) because that is how the API shows them and how QStash clients read them;
 * every lookup is case-insensitive so callers never depend on the spelling a client used.
 */

/** RFC 9110 `token` characters: what a header name may contain. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/** True when `name` is a syntactically valid header name (an RFC 9110 token). */
export function isValidHeaderName(name: string): boolean {
  return TOKEN.test(name);
}

/**
 * True when `value` is free of control characters other than horizontal tab (so no CR/LF
 * injection, no NUL). Values that come from query parameters need this check; Node has already
 * checked the ones that arrived as real headers. A value Ferry will send needs
 * {@link headerValueProblem} too.
 */
export function isValidHeaderValue(value: string): boolean {
  // eslint-disable-next-line no-control-regex
  return !/[\u0000-\u0008\u000a-\u001f\u007f]/.test(value);
}

/**
 * Why `value` cannot be sent as a header value, or `undefined` when it can. The delivery's HTTP
 * client (undici) refuses a value outside tab, U+0020–U+007E and U+0080–U+00FF on every attempt
 * (`invalid … header`), so such a value must be refused when the message is published, not
 * accepted and then never delivered.
 */
export function headerValueProblem(value: string): string | undefined {
  // One test for the usual value (it runs for every forwarded header of every publish).
  if (!/[^\t\u0020-\u007e\u0080-\u00ff]/.test(value)) return undefined;
  if (!isValidHeaderValue(value)) return 'control characters are not allowed in a header value';
  return 'characters above U+00FF cannot be sent in a header value (percent-encode them)';
}

/**
 * Go's `textproto.CanonicalMIMEHeaderKey`: the first letter and every letter after a `-` upper
 * case, the rest lower case (`x-API-key` → `X-Api-Key`). A name that is not a valid token is
 * returned unchanged, as Go does, so an odd name is never silently merged with another.
 */
export function canonicalHeaderName(name: string): string {
  let out = canonicalNames.get(name);
  if (out !== undefined) return out;
  out = canonicalize(name);
  if (name.length <= CANONICAL_CACHE_NAME_MAX) {
    if (canonicalNames.size >= CANONICAL_CACHE_SIZE) canonicalNames.clear();
    canonicalNames.set(name, out);
  }
  return out;
}

function canonicalize(name: string): string {
  if (!TOKEN.test(name)) return name;
  let out = '';
  let upper = true;
  for (const ch of name) {
    out += upper ? ch.toUpperCase() : ch.toLowerCase();
    upper = ch === '-';
  }
  return out;
}

/**
 * Canonical names already computed. Every publish and every delivery's response canonicalizes
 * the same few header names, a string built a character at a time each (a heap profile of the
 * end-to-end benchmark put the delivery thread's response headers at a tenth of what it
 * allocated). Bounded: names come from clients and destinations, so at most this many, each at
 * most this long, and the cache starts over when full.
 */
const canonicalNames = new Map<string, string>();
const CANONICAL_CACHE_SIZE = 1024;
const CANONICAL_CACHE_NAME_MAX = 64;

/** Every value of `name` in `map` (case-insensitive), in order; `[]` when absent. */
export function headerValues(map: HeaderMap, name: string): string[] {
  const lower = name.toLowerCase();
  const out: string[] = [];
  for (const key of Object.keys(map)) {
    if (key.toLowerCase() === lower) out.push(...(map[key] ?? []));
  }
  return out;
}

/** The first value of `name` in `map` (case-insensitive), or `undefined` when absent. */
export function headerGet(map: HeaderMap, name: string): string | undefined {
  return headerValues(map, name)[0];
}

/**
 * Appends `value` to `name` in `map`, mutating it. The entry ends up under the canonical name,
 * merging any other spelling already present.
 */
export function addHeader(map: HeaderMap, name: string, value: string): void {
  setHeader(map, name, [...headerValues(map, name), value]);
}

/**
 * Replaces every value of `name` (any spelling) in `map` with `values`, under the canonical name.
 * Written with `defineProperty` so a header named `__proto__` becomes a plain entry instead of
 * replacing the object's prototype.
 */
export function setHeader(map: HeaderMap, name: string, values: string[]): void {
  deleteHeader(map, name);
  Object.defineProperty(map, canonicalHeaderName(name), {
    value: values,
    enumerable: true,
    writable: true,
    configurable: true,
  });
}

/**
 * Builds a `HeaderMap` one header at a time with the rules of `addHeader` and `setHeader` (one
 * entry per name whatever its spelling, under the canonical form of the spelling given last, the
 * entry last changed last), in time linear in the headers. Those two scan the whole map on every
 * call, which made a request's n headers cost n² steps: 10,000 forwarded headers in one batch
 * entry held the main thread for about 16 s. For maps built from a request's headers; the two
 * remain for a change or two to a map.
 */
export class HeaderMapBuilder {
  private readonly entries = new Map<string, { name: string; values: string[] }>();

  /** Appends `value` to `name`, as `addHeader`. */
  add(name: string, value: string): void {
    const lower = name.toLowerCase();
    const entry = this.entries.get(lower);
    if (entry === undefined) {
      this.entries.set(lower, { name: canonicalHeaderName(name), values: [value] });
      return;
    }
    entry.name = canonicalHeaderName(name);
    entry.values.push(value);
    this.entries.delete(lower); // last changed, last listed
    this.entries.set(lower, entry);
  }

  /** Replaces every value of `name`, as `setHeader`. */
  set(name: string, values: string[]): void {
    const lower = name.toLowerCase();
    this.entries.delete(lower);
    this.entries.set(lower, { name: canonicalHeaderName(name), values: [...values] });
  }

  /** The map, `__proto__` and the like as plain entries (see `setHeader`). */
  build(): HeaderMap {
    const map: HeaderMap = {};
    for (const { name, values } of this.entries.values()) {
      Object.defineProperty(map, name, {
        value: values,
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    return map;
  }
}

/** Removes `name` (case-insensitive, every spelling) from `map`. */
export function deleteHeader(map: HeaderMap, name: string): void {
  const lower = name.toLowerCase();
  for (const key of Object.keys(map)) {
    if (key.toLowerCase() === lower) delete map[key];
  }
}

/**
 * Lower-case names of headers that describe one connection or the framing of one message, so
 * they are never copied onto a delivery: the RFC 9110 hop-by-hop headers, `Host` and
 * `Content-Length` (the delivery sets its own), plus `Expect` and `Proxy-Connection`, which
 * undici refuses to send.
 */
export const HOP_BY_HOP_HEADERS: ReadonlySet<string> = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'host',
  'content-length',
  'expect',
]);

/**
 * Quotes a client-supplied value for an error message: JSON string escaping (so control
 * characters and quotes stay visible) and cut to `max` characters, so a huge header does not
 * make a huge error.
 */
export function quoteValue(value: string, max = 128): string {
  return JSON.stringify(value.length > max ? `${value.slice(0, max)}…` : value);
}
