/**
 * The credential the console signs in with. It lives in sessionStorage only: gone when the tab
 * closes, never in localStorage, never in a URL.
 */
const KEY = 'ferry.console.credential';

/** A messaging token (the messaging pages) or management credentials (the Accounts pages). */
export type Credential =
  { kind: 'token'; token: string } | { kind: 'management'; email: string; apiKey: string };

export function loadCredential(): Credential | undefined {
  const text = sessionStorage.getItem(KEY);
  if (!text) return undefined;
  try {
    return JSON.parse(text) as Credential;
  } catch {
    return undefined;
  }
}

export function saveCredential(credential: Credential): void {
  sessionStorage.setItem(KEY, JSON.stringify(credential));
}

/** Signing out forgets everything the console kept. */
export function forgetAll(): void {
  sessionStorage.clear();
}

/** Base64 of UTF-8 text (`btoa` alone takes Latin-1 only). */
function base64Utf8(text: string): string {
  let binary = '';
  for (const byte of new TextEncoder().encode(text)) binary += String.fromCharCode(byte);
  return btoa(binary);
}

export function authorization(credential: Credential): string {
  return credential.kind === 'token'
    ? `Bearer ${credential.token}`
    : `Basic ${base64Utf8(`${credential.email}:${credential.apiKey}`)}`;
}
