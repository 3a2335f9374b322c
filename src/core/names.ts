/**
 * The one rule every name a caller creates shares beyond its own pattern: not `.` and not `..`.
 *
 * Queue names, schedule ids, URL-group names, flow-control keys and workflow run ids go into URL
 * paths (`/v2/queues/{name}/pause`, `/v2/schedules/{id}`, `/v2/topics/{name}`,
 * `/v2/flowControl/{key}/pin`, `/v2/workflows/runs/{id}`). The WHATWG URL parser, which browsers,
 * `fetch` and undici use, removes `.` and `..` path segments, also written `%2E` or `%2e`, so no
 * such client (the console, the official `@upstash/qstash` SDK) can address a resource named so:
 * `/v2/schedules/./pause` arrives as `/v2/schedules/pause`, which is a schedule creation, and
 * `/v2/queues/../pause` as `/v2/pause`. Endpoint names never go into a path but share the
 * URL-group name rule, so they follow it too.
 *
 * Names stored before this rule keep working where they are read back (a schedule's tick, a
 * listing); only a client that sends the path as written (`curl --path-as-is`) can address them.
 */
import { badRequest } from './errors.js';
import { quoteValue } from './headers.js';

/** True for `.` and `..`, the names a URL path cannot carry. */
export function isDotSegment(name: string): boolean {
  return name === '.' || name === '..';
}

/**
 * Returns `name`, refusing `.` and `..`.
 * @param field how the request named it (`Svc-Schedule-Id`, `body.queueName`).
 * @throws FerryError 400 naming `field`.
 */
export function refuseDotSegment(name: string, field: string): string {
  if (isDotSegment(name)) {
    throw badRequest(
      `invalid ${field} ${quoteValue(name)}: "." and ".." cannot be names, because URLs drop them as path segments and no client could address it`,
    );
  }
  return name;
}
