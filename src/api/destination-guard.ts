/**
 * Production mode's request-time refusal of URLs Ferry would deliver to: every route that takes
 * a destination, endpoint or callback URL checks it here, so a bad one is a 400 at once instead of
 * failed attempts later. The dispatcher checks again on connect, on the resolved address (a name
 * that resolves to a private address is only known then).
 */
import { isRefusedHost } from '../core/addresses.js';
import { badRequest } from '../core/errors.js';
import { quoteValue } from '../core/headers.js';
import type { CallbackSpec } from '../core/types.js';

/**
 * @throws FerryError 400 in production mode when the URL's host is `localhost` (or under it) or
 *   an IP literal that is not globally reachable unicast (core/addresses.ts).
 */
export function checkDestinationAllowed(
  url: string,
  production: boolean,
  what = 'destination',
): void {
  if (!production) return;
  let host: string;
  try {
    host = new URL(url).hostname;
  } catch {
    throw badRequest(`invalid ${what} ${quoteValue(url)}: expected an http:// or https:// URL`);
  }
  if (isRefusedHost(host)) {
    throw badRequest(
      `${what} ${quoteValue(url)} is a private or loopback address (refused in production mode)`,
    );
  }
}

/** Checks the callback and failure-callback URLs of publish settings (`<P>-Callback`…). */
export function checkCallbacksAllowed(
  settings: { callback?: CallbackSpec; failureCallback?: CallbackSpec },
  production: boolean,
  prefix: string,
): void {
  if (settings.callback) {
    checkDestinationAllowed(settings.callback.url, production, `${prefix}-Callback`);
  }
  if (settings.failureCallback) {
    const field = `${prefix}-Failure-Callback`;
    checkDestinationAllowed(settings.failureCallback.url, production, field);
  }
}
