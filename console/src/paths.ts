/**
 * Names in URL paths. The browser's URL parser removes `.` and `..` path segments, also when
 * written `%2E` or `%2e`, so no encoding lets a request address a queue, schedule, URL group,
 * flow-control key or workflow run named so: `/v2/schedules/./pause` is sent as
 * `/v2/schedules/pause`, a schedule creation, and `/v2/queues/../pause` as `/v2/pause`. Ferry
 * refuses these names now, but one stored earlier still shows up in lists: the console shows it
 * and turns its actions off with this reason, and never builds a URL from it.
 */

/** Why `name` cannot go into a URL path, or undefined when it can. */
export function unaddressable(name: string): string | undefined {
  if (name !== '.' && name !== '..') return undefined;
  return (
    `The console cannot act on "${name}": browsers drop "." and ".." from URL paths, so the ` +
    'request would reach another route. Use curl --path-as-is (see the API guide).'
  );
}

/**
 * `name` as one percent-encoded path segment.
 * @param what how the user knows the name (`Queue`, `Destination`), for the error.
 * @throws Error for `.` and `..`, before any request is made.
 */
export function segment(name: string, what: string): string {
  if (name === '.' || name === '..') {
    throw new Error(
      `${what} "${name}" cannot be used: browsers drop "." and ".." from URL paths, so the ` +
        'request would reach another route.',
    );
  }
  return encodeURIComponent(name);
}
