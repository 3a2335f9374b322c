import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * Messaging tokens follow the QStash format, so SDK users can paste them unchanged: base64 of
 * `{"UserID": <account id>, "Password": <password>}`. Only a SHA-256 of the password is stored.
 */
export function encodeToken(accountId: string, password: string): string {
  return Buffer.from(JSON.stringify({ UserID: accountId, Password: password })).toString('base64');
}

export function decodeToken(token: string): { accountId: string; password: string } | undefined {
  try {
    const parsed: unknown = JSON.parse(Buffer.from(token, 'base64').toString('utf8'));
    if (typeof parsed !== 'object' || parsed === null) return undefined;
    const { UserID, Password } = parsed as Record<string, unknown>;
    if (typeof UserID !== 'string' || typeof Password !== 'string') return undefined;
    return { accountId: UserID, password: Password };
  } catch {
    return undefined;
  }
}

export const newPassword = (): string => randomBytes(24).toString('base64url');

export function hashPassword(password: string): string {
  return createHash('sha256').update(password).digest('hex');
}

/** Constant-time check of a password against its stored hash. */
export function passwordMatches(password: string, hash: string): boolean {
  const a = Buffer.from(hashPassword(password), 'hex');
  const b = Buffer.from(hash, 'hex');
  return a.length === b.length && timingSafeEqual(a, b);
}
