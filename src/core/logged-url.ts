/**
 * URLs as Ferry logs them: with the value of every credential-like query parameter replaced by
 * `[redacted]`. The token rides in the query for webhook senders (`queue_token`, `qstash_token`),
 * and a publish's settings may carry a forwarded `Authorization` (`svc-forward-authorization=…`)
 * or a destination's own `access_token`; a log line must never hold any of them.
 *
 * Written by hand rather than with `URLSearchParams`: that would re-encode every other parameter,
 * and the logged URL should stay the one the client sent.
 */

/** Query parameter names whose values are never logged (case-insensitive, anywhere in the name). */
const CREDENTIAL_NAME = /token|authorization|secret|password|api[-_]?key|signature/i;

export const REDACTED = '[redacted]';

export function urlForLog(url: string): string {
  const q = url.indexOf('?');
  if (q === -1) return url;
  const parts = url
    .slice(q + 1)
    .split('&')
    .map((part) => {
      const eq = part.indexOf('=');
      const rawName = eq === -1 ? part : part.slice(0, eq);
      return CREDENTIAL_NAME.test(decodeName(rawName)) ? `${rawName}=${REDACTED}` : part;
    });
  return `${url.slice(0, q)}?${parts.join('&')}`;
}

/** A query parameter name decoded (`+` is a space), or as sent when its escapes are malformed. */
function decodeName(raw: string): string {
  try {
    return decodeURIComponent(raw.replace(/\+/g, ' '));
  } catch {
    return raw;
  }
}
