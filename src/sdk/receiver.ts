import { base64url, decodeJwt, decodeProtectedHeader, errors, jwtVerify } from 'jose';
import type { JWTPayload } from 'jose';
import { SignatureError } from './errors.js';

/** Options of {@link Receiver}; the keys are shown by `GET /v2/keys`. */
export interface ReceiverOptions {
  /** The account's current signing key (the UTF-8 bytes of this string are the HS256 key). */
  currentSigningKey: string;
  /** The key that becomes current on rotation; tried when the current key does not verify. */
  nextSigningKey: string;
  /** Expected `iss` claim: `Ferry` (the default), or `Upstash` for a server with that prefix. */
  issuer?: string;
  /** Clock skew allowed on `exp`/`nbf`/`iat`, in seconds (default 0). */
  clockToleranceSec?: number;
}

/** What {@link Receiver.verify} checks. */
export interface VerifyParams {
  /** The `<P>-Signature` header value. */
  signature: string;
  /** The raw request body exactly as received; a string is hashed as its UTF-8 bytes. */
  body: string | Uint8Array;
  /** The URL the request was sent to; when given it must equal the `sub` claim exactly. */
  url?: string;
}

/** The claims Ferry always signs; a token without them is `malformed`. */
interface FerryClaims {
  iss: string;
  sub: string;
  exp: number;
  body: string;
}

const encoder = new TextEncoder();

/**
 * Verifies the `<P>-Signature` of requests Ferry sends (deliveries, callbacks, workflow calls).
 *
 * Two keys because of rotation: after `POST /v2/keys/rotate`, the old `next` key signs, so a
 * receiver configured with both keys keeps accepting requests across a rotation without a
 * coordinated redeploy. Runs on any runtime with Web Crypto (Node 20+, edge runtimes).
 */
export class Receiver {
  private readonly keys: Uint8Array[];
  private readonly issuer: string;
  private readonly clockToleranceSec: number;

  constructor(opts: ReceiverOptions) {
    const keys = [opts.currentSigningKey, opts.nextSigningKey].filter(
      (key, i, all) => key !== '' && all.indexOf(key) === i,
    );
    if (keys.length === 0) throw new TypeError('Receiver needs at least one non-empty signing key');
    this.keys = keys.map((key) => encoder.encode(key));
    this.issuer = opts.issuer ?? 'Ferry';
    this.clockToleranceSec = opts.clockToleranceSec ?? 0;
  }

  /**
   * Resolves `true` when the signature is valid for this body (and URL, when given); otherwise
   * rejects with a {@link SignatureError} whose `code` names the most specific reason. A token
   * that some key verifies but that is expired, or for another URL or body, is reported as such,
   * never as `invalid_signature`.
   */
  async verify(p: VerifyParams): Promise<true> {
    const claims = parseClaims(p.signature);
    await this.verifyWithKeys(p.signature);
    if (p.url !== undefined && claims.sub !== p.url) {
      throw new SignatureError(
        'url_mismatch',
        `signature was issued for ${claims.sub}, not for ${p.url}`,
      );
    }
    const actual = await sha256Base64url(
      typeof p.body === 'string' ? encoder.encode(p.body) : p.body,
    );
    if (claims.body.replace(/=+$/, '') !== actual) {
      throw new SignatureError(
        'body_mismatch',
        `body hash ${actual} does not match the signed hash ${claims.body}`,
      );
    }
    return true;
  }

  /** Tries each key in order; only a failed signature check moves on to the next key. */
  private async verifyWithKeys(token: string): Promise<JWTPayload> {
    let lastFailure: unknown;
    for (const key of this.keys) {
      try {
        const { payload } = await jwtVerify(token, key, {
          algorithms: ['HS256'],
          issuer: this.issuer,
          clockTolerance: this.clockToleranceSec,
        });
        return payload;
      } catch (err) {
        // jose checks the signature before the claims, so any claim error below means this key
        // verified the token: report it instead of trying the other key.
        if (err instanceof errors.JWSSignatureVerificationFailed) {
          lastFailure = err;
          continue;
        }
        throw classify(err);
      }
    }
    throw new SignatureError('invalid_signature', 'signature does not verify with either key', {
      cause: lastFailure,
    });
  }
}

function classify(err: unknown): SignatureError {
  const message = err instanceof Error ? err.message : String(err);
  if (err instanceof errors.JWTExpired) {
    return new SignatureError('expired', `signature expired: ${message}`, { cause: err });
  }
  if (err instanceof errors.JWTClaimValidationFailed) {
    return new SignatureError('invalid_claim', `invalid claim "${err.claim}": ${message}`, {
      cause: err,
    });
  }
  if (err instanceof errors.JWSInvalid || err instanceof errors.JWTInvalid) {
    return new SignatureError('malformed', `malformed signature: ${message}`, { cause: err });
  }
  // JOSEAlgNotAllowed (a token that is not HS256) and anything unexpected.
  return new SignatureError('invalid_signature', `signature rejected: ${message}`, { cause: err });
}

/** Decodes (without verifying) and checks the shape, so a broken token is `malformed`. */
function parseClaims(token: string): FerryClaims {
  let payload: JWTPayload;
  try {
    decodeProtectedHeader(token);
    payload = decodeJwt(token);
  } catch (err) {
    throw new SignatureError('malformed', 'signature is not a compact JWT', { cause: err });
  }
  const { iss, sub, exp, body } = payload as Record<string, unknown>;
  if (typeof iss !== 'string' || typeof sub !== 'string' || typeof body !== 'string') {
    throw new SignatureError('malformed', 'signature lacks a string iss, sub or body claim');
  }
  if (typeof exp !== 'number') {
    throw new SignatureError('malformed', 'signature lacks a numeric exp claim');
  }
  return { iss, sub, exp, body };
}

async function sha256Base64url(bytes: Uint8Array): Promise<string> {
  const digest = await globalThis.crypto.subtle.digest('SHA-256', bytes);
  // jose's encoder emits no padding.
  return base64url.encode(new Uint8Array(digest));
}
