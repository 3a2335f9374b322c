/**
 * Errors the SDK throws. Both carry a machine-readable field (`status`, `code`) so callers can
 * branch without parsing messages.
 */

/**
 * The server answered with a non-2xx status. `message` is the server's `{"error"}` text (or the
 * raw body when it was not that JSON shape), so it names the offending field or value.
 */
export class FerryApiError extends Error {
  constructor(
    /** HTTP status of the response (400 invalid input, 401, 404, 412, 413, 429, …). */
    readonly status: number,
    message: string,
    /** Response headers: the rate-limit headers of a 429 live here. */
    readonly headers: Headers,
    /** The raw response body text. */
    readonly body: string,
  ) {
    super(message);
    this.name = 'FerryApiError';
  }

  /** On a 429: which limit was hit, with its header values; undefined on other answers. */
  get rateLimit(): RateLimitInfo | undefined {
    return this.status === 429 ? rateLimitOf(this.headers) : undefined;
  }
}

/** The rate-limit headers of an answer (a 429, or a publish showing the soft daily quota). */
export interface RateLimitInfo {
  /**
   * `daily`: the daily quota (`RateLimit-*`; on a 429 the hard quota, on a success the soft
   * one). `burst`: `max_requests_per_second` (`Burst-RateLimit-*`). Like the official QStash SDK,
   * `RateLimit-Limit` decides: present means daily.
   */
  kind: 'daily' | 'burst';
  limit: number;
  remaining: number;
  /** When the window ends (the next second, or the next UTC midnight), Unix seconds. */
  reset: number;
}

/** Reads `RateLimit-*` or else `Burst-RateLimit-*` from `headers`; undefined when absent. */
export function rateLimitOf(headers: Headers): RateLimitInfo | undefined {
  const read = (kind: RateLimitInfo['kind'], prefix: string): RateLimitInfo | undefined => {
    const limit = headers.get(`${prefix}RateLimit-Limit`);
    if (limit === null) return undefined;
    const number = (name: string): number => Number(headers.get(`${prefix}RateLimit-${name}`));
    return { kind, limit: Number(limit), remaining: number('Remaining'), reset: number('Reset') };
  };
  return read('daily', '') ?? read('burst', 'Burst-');
}

/**
 * Why a signature was rejected. Distinct codes so a receiver can log or answer differently:
 * - `malformed`: not a compact JWT, or a required claim (`iss`, `sub`, `exp`, `body`) is missing
 *   or of the wrong type.
 * - `invalid_signature`: neither the current nor the next key (HS256) verifies the token.
 * - `expired`: a key verifies it but `exp` has passed (beyond the clock tolerance).
 * - `invalid_claim`: a key verifies it but the issuer differs, or `nbf`/`iat` lie in the future.
 * - `url_mismatch`: the token was issued for another URL (`sub`).
 * - `body_mismatch`: the body's SHA-256 differs from the `body` claim.
 */
export type SignatureErrorCode =
  | 'malformed'
  | 'invalid_signature'
  | 'expired'
  | 'invalid_claim'
  | 'url_mismatch'
  | 'body_mismatch';

/** A request's `<P>-Signature` did not verify; `code` says why. */
export class SignatureError extends Error {
  constructor(
    readonly code: SignatureErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'SignatureError';
  }
}
