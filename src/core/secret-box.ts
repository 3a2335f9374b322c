/**
 * Sealing the secrets Ferry must show again (a messaging account's password, a search index's
 * tokens) so that they are encrypted at rest: AES-256-GCM from node:crypto under Ferry's secret
 * key (`--secret-key`, or `<data dir>/secret.key`; see cli/secret-key.ts). Authentication never
 * opens them: it compares the SHA-256 hashes kept beside them (core/token.ts).
 *
 * A sealed value is `v1.<iv>.<tag>.<ciphertext>` (base64url parts): a fresh 12-byte IV per seal,
 * the 16-byte GCM tag, and the secret's UTF-8 bytes encrypted. `context` names the row and field
 * (`account-password:<id>`) and is authenticated as additional data, so a sealed value copied to
 * another row or field does not open there.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/** The key length of AES-256, bytes. */
export const SECRET_KEY_BYTES = 32;

const VERSION = 'v1';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/**
 * A key given as text: 64 hex digits, or base64 / base64url of exactly 32 bytes. Undefined for
 * anything else (the caller names the option in its error, never the value).
 */
export function parseSecretKey(text: string): Buffer | undefined {
  const trimmed = text.trim();
  if (/^[0-9a-fA-F]{64}$/.test(trimmed)) return Buffer.from(trimmed, 'hex');
  if (!/^[A-Za-z0-9+/_-]{43}=?$/.test(trimmed)) return undefined;
  const key = Buffer.from(trimmed, 'base64');
  return key.length === SECRET_KEY_BYTES ? key : undefined;
}

export class SecretBox {
  private readonly key: Buffer;

  constructor(key: Uint8Array) {
    if (key.length !== SECRET_KEY_BYTES) {
      throw new Error(`a secret key is ${SECRET_KEY_BYTES} bytes, got ${key.length}`);
    }
    this.key = Buffer.from(key);
  }

  /** Encrypts `secret` for the row and field `context` names. */
  seal(secret: string, context: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(Buffer.from(context, 'utf8'));
    const sealed = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
    const parts = [iv, cipher.getAuthTag(), sealed].map((b) => b.toString('base64url'));
    return [VERSION, ...parts].join('.');
  }

  /**
   * The secret `sealed` holds, or undefined when it does not open: sealed under another key, for
   * another context, altered, or not a sealed value at all.
   */
  open(sealed: string, context: string): string | undefined {
    const [version, iv, tag, data, extra] = sealed.split('.');
    if (version !== VERSION || iv === undefined || tag === undefined || data === undefined) {
      return undefined;
    }
    if (extra !== undefined) return undefined;
    const ivBytes = Buffer.from(iv, 'base64url');
    const tagBytes = Buffer.from(tag, 'base64url');
    if (ivBytes.length !== IV_BYTES || tagBytes.length !== TAG_BYTES) return undefined;
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.key, ivBytes, {
        authTagLength: TAG_BYTES,
      });
      decipher.setAAD(Buffer.from(context, 'utf8'));
      decipher.setAuthTag(tagBytes);
      const plain = Buffer.concat([
        decipher.update(Buffer.from(data, 'base64url')),
        decipher.final(),
      ]);
      return plain.toString('utf8');
    } catch {
      return undefined; // the tag did not verify
    }
  }
}
