/**
 * The credential the console signs in with. It lives in sessionStorage only: gone when the tab
 * closes, never in localStorage, never in a URL.
 */
const KEY = 'ferry.console.credential';

export type Credential = { kind: 'token'; token: string };

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

export function authorization(credential: Credential): string {
  return `Bearer ${credential.token}`;
}
