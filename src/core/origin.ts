/**
 * A destination's origin (scheme, host and port): the unit of fairness between destinations
 * (engine/origin-limit.ts) and of the claim's per-origin room (storage).
 */

/** Origins of recent URLs: each message is looked up a few times, and URLs repeat. */
const origins = new Map<string, string>();

/** `https://Example.com:443/x` → `https://example.com`; an unparsable URL is its own origin. */
export function originOf(url: string): string {
  let origin = origins.get(url);
  if (origin === undefined) {
    try {
      origin = new URL(url).origin;
    } catch {
      origin = url;
    }
    if (origins.size >= 10_000) origins.clear();
    origins.set(url, origin);
  }
  return origin;
}
