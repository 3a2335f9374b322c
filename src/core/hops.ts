/**
 * Publish loops. A URL group (or a message) whose destination is Ferry's own publish URL, with
 * the token forwarded (say, in the group's default headers), republishes every message it is
 * delivered, and a group of two such endpoints doubles them at every pass: bounded only by the
 * account's rate limit. So a delivery counts its passes, like HTTP's `Max-Forwards`: a publish
 * whose request is itself one of Ferry's deliveries (it carries `<P>-Message-Id`) makes messages
 * one hop further than that delivery's (`<P>-Hops`, sent only when above 0), and a publish past
 * `MAX_HOPS` is refused. Legitimate chains (one Ferry relaying to another) are a hop or two.
 */
import { badRequest } from './errors.js';
import type { IncomingHeaders } from './publish-request.js';

/**
 * The most passes through Ferry a message may have made: a loop through a group of n endpoints
 * that point back at it makes at most n + n² + … + n^(MAX_HOPS + 1) messages before it stops.
 */
export const MAX_HOPS = 8;

const names = new Map<string, { messageId: string; hops: string; header: string }>();

/** The header names of `prefix`, built once per prefix (this runs on every publish). */
function namesOf(prefix: string): { messageId: string; hops: string; header: string } {
  let n = names.get(prefix);
  if (!n) {
    const lower = prefix.toLowerCase();
    n = { messageId: `${lower}-message-id`, hops: `${lower}-hops`, header: `${prefix}-Hops` };
    names.set(prefix, n);
  }
  return n;
}

/** The header a delivery of a message `hops` passes from its first publish carries. */
export const hopsHeader = (prefix: string): string => namesOf(prefix).header;

/**
 * The hops of the messages a publish request makes: undefined for a request that is not one of
 * Ferry's deliveries, else its delivery's hops plus one. Read from the request's own headers
 * only (never query parameters or a batch entry's headers): they are what a delivery carries.
 *
 * @throws FerryError 400 past `MAX_HOPS`, naming `<P>-Hops`.
 */
export function hopsOf(prefix: string, headers: IncomingHeaders): number | undefined {
  const n = namesOf(prefix);
  if (headers[n.messageId] === undefined) return undefined;
  const given = headers[n.hops];
  // Anything but a small count (absent, repeated, garbled) is a first pass: the header is ours,
  // and a request that spells it otherwise did not come from a Ferry delivery.
  const before = typeof given === 'string' && /^[0-9]{1,3}$/.test(given) ? Number(given) : 0;
  const hops = before + 1;
  if (hops > MAX_HOPS) {
    throw badRequest(
      `publish loop: this request delivers a message already republished through Ferry ` +
        `${before} times (${n.header}: ${before}; at most ${MAX_HOPS}): a URL group or ` +
        `destination probably points back at this publish URL`,
    );
  }
  return hops;
}
