import { badRequest } from './errors.js';
import { quoteValue } from './headers.js';

/** Where a published message goes: one URL, or every endpoint of a URL group. */
export type Destination = { kind: 'url'; url: string } | { kind: 'group'; name: string };

/** Longest accepted destination URL, in characters (8 KiB). */
export const MAX_URL_LENGTH = 8 * 1024;

/** URL-group and endpoint names, as API.md allows for ids: letters, digits, `-`, `_`, `.`. */
export const NAME_PATTERN = /^[A-Za-z0-9_.-]+$/;

/**
 * Query parameters that carry the token when a client cannot set `Authorization` (`queue_token`,
 * and `qstash_token` as an alias): every messaging route accepts them besides its own.
 */
export const TOKEN_PARAMS: ReadonlySet<string> = new Set(['queue_token', 'qstash_token']);

/**
 * Splits `POST /v2/publish/{destination}` into the destination and Ferry's own query
 * parameters.
 *
 * Clients put the destination URL into the path raw (`/v2/publish/https://example.com/a?b=1`),
 * so the destination's own query string arrives as the request's query string, mixed with
 * Ferry's settings (`svc-retries=3`) and the token (`queue_token`). Parameters named
 * `queue_token`, `qstash_token` or starting with `<prefix>-` (case-insensitive) are Ferry's and
 * come back in `query`; every other parameter is re-attached to the destination URL in its
 * original order and encoding. For a URL-group destination those other parameters are dropped:
 * there is no single URL to attach them to.
 *
 * The destination may also arrive percent-encoded (`https%3A%2F%2Fexample.com`), and proxies that
 * merge slashes turn `https://x` into `https:/x`; both are repaired. The returned `url` keeps the
 * client's text; only when it holds characters that cannot be sent raw (spaces, non-ASCII,
 * control characters, which a percent-encoded destination can decode to) is it replaced by the
 * WHATWG serialisation, which is what the HTTP client would request anyway.
 *
 * @param p.rawPath everything after `/v2/publish/` in the raw request URL, undecoded.
 * @param p.rawQuery the raw query string after `?`, or `''`.
 * @param p.prefix the header prefix (`Svc`).
 * @throws FerryError 400 for an empty or invalid destination, a URL that `new URL` rejects or
 *   one longer than {@link MAX_URL_LENGTH}.
 */
export function parseDestination(p: { rawPath: string; rawQuery: string; prefix: string }): {
  destination: Destination;
  query: URLSearchParams;
} {
  const ferryPrefix = `${p.prefix.toLowerCase()}-`;
  const query = new URLSearchParams();
  const kept: string[] = [];
  for (const part of p.rawQuery === '' ? [] : p.rawQuery.split('&')) {
    const key = decodeQueryComponent(part.split('=', 1)[0] ?? '');
    const lower = key.toLowerCase();
    if (TOKEN_PARAMS.has(key) || lower.startsWith(ferryPrefix)) {
      for (const [k, v] of new URLSearchParams(part)) query.append(k, v);
    } else {
      kept.push(part);
    }
  }

  let target = p.rawPath;
  if (/^https?%3a/i.test(target)) {
    try {
      target = decodeURIComponent(target);
    } catch {
      throw badRequest(`invalid destination ${quoteValue(p.rawPath)}: bad percent-encoding`);
    }
  }
  if (target === '') {
    throw badRequest('missing destination: expected /v2/publish/<URL or URL-group name>');
  }

  if (!/^https?:/i.test(target)) {
    if (!NAME_PATTERN.test(target)) {
      throw badRequest(
        `invalid destination ${quoteValue(target)}: expected an http:// or https:// URL or a URL-group name (letters, digits, "-", "_", ".")`,
      );
    }
    return { destination: { kind: 'group', name: target }, query };
  }

  // "https:/example.com" (a proxy merged the slashes) → "https://example.com".
  target = target.replace(/^(https?):\/(?!\/)/i, '$1://');
  if (kept.length > 0) target = appendQuery(target, kept.join('&'));

  if (target.length > MAX_URL_LENGTH) {
    throw badRequest(
      `invalid destination ${quoteValue(target)}: longer than ${MAX_URL_LENGTH} characters`,
    );
  }
  if (!/^https?:\/\//i.test(target)) {
    throw badRequest(`invalid destination URL ${quoteValue(target)}: expected http:// or https://`);
  }
  let parsed: URL;
  try {
    parsed = new URL(target);
  } catch {
    throw badRequest(`invalid destination URL ${quoteValue(target)}`);
  }
  const problem = hostProblem(target, parsed);
  if (problem !== undefined) {
    throw badRequest(`invalid destination URL ${quoteValue(target)}: ${problem}`);
  }
  const url = /[^\x21-\x7e]/.test(target) ? parsed.href : target;
  return { destination: { kind: 'url', url }, query };
}

/**
 * Why the host of `text` as written is not the host `parsed` (its WHATWG parse) would deliver
 * to, or `undefined` when they agree. WHATWG parsing skips any number of slashes after
 * `http:` and reads `\` as `/`, so `http:///path` would go to host `path` and
 * `http://h:1\x` to `h:1` while the URL shown is another. The authority as written (up to the
 * first `/`, `?` or `#`, RFC 3986) must be non-empty, hold no backslash, and parse alone to the
 * same host; normalisations WHATWG applies to a host alone (case, default port, IDN, IPv4
 * shorthand) still pass.
 */
function hostProblem(text: string, parsed: URL): string | undefined {
  const scheme = /^(https?):\/\//i.exec(text);
  if (!scheme) return undefined; // the callers refuse other schemes
  const rest = text.slice(scheme[0].length);
  const end = rest.search(/[/?#]/);
  const authority = end === -1 ? rest : rest.slice(0, end);
  if (authority === '' || parsed.hostname === '') return 'missing host';
  if (authority.includes('\\')) return 'a backslash in the host part';
  // The common case, written as delivered: no second parse on the publish path.
  if (authority === parsed.host) return undefined;
  let alone: string;
  try {
    alone = new URL(`${scheme[1]}://${authority}/`).host;
  } catch {
    alone = '';
  }
  if (alone !== parsed.host) return `the host would be read as ${quoteValue(parsed.host)}`;
  return undefined;
}

/** Adds `extra` (raw `a=1&b=2` text) to the query of `url`, before any `#fragment`. */
function appendQuery(url: string, extra: string): string {
  const hash = url.indexOf('#');
  const base = hash === -1 ? url : url.slice(0, hash);
  const fragment = hash === -1 ? '' : url.slice(hash);
  const joiner = !base.includes('?') ? '?' : base.endsWith('?') || base.endsWith('&') ? '' : '&';
  return `${base}${joiner}${extra}${fragment}`;
}

/** Form-decodes one query component (`+` is a space); leaves malformed escapes as they are. */
function decodeQueryComponent(text: string): string {
  const spaced = text.replace(/\+/g, ' ');
  try {
    return decodeURIComponent(spaced);
  } catch {
    return spaced;
  }
}

/**
 * `text` (trimmed) when it is an absolute `http://` or `https://` URL with a host, at most
 * {@link MAX_URL_LENGTH} characters: endpoint and callback URLs.
 * @throws FerryError 400 naming `field` otherwise.
 */
export function checkHttpUrl(text: string, field: string): string {
  const url = text.trim();
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch {
    parsed = undefined;
  }
  if (
    !parsed ||
    !/^https?:$/.test(parsed.protocol) ||
    parsed.hostname === '' ||
    url.length > MAX_URL_LENGTH ||
    !/^https?:\/\//i.test(url)
  ) {
    throw badRequest(`invalid ${field} ${quoteValue(text)}: expected an http:// or https:// URL`);
  }
  const problem = hostProblem(url, parsed);
  if (problem !== undefined) throw badRequest(`invalid ${field} ${quoteValue(text)}: ${problem}`);
  // `new URL` drops tabs and newlines without a word and keeps other control characters, which
  // the HTTP client then refuses on every attempt (and PostgreSQL cannot store a NUL at all).
  // eslint-disable-next-line no-control-regex
  if (/[\x00-\x1f\x7f]/.test(url)) {
    throw badRequest(`invalid ${field} ${quoteValue(text)}: control characters are not allowed`);
  }
  return url;
}
