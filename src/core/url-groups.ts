/**
 * URL groups ("topics"), pure: validating names, endpoint lists and default headers from request
 * bodies, and the changes `POST`/`DELETE /v2/topics/{name}/endpoints` make to a group.
 */
import { checkHttpUrl, NAME_PATTERN } from './destination.js';
import { badRequest, limitExceeded, notFound } from './errors.js';
import {
  canonicalHeaderName,
  isValidHeaderName,
  isValidHeaderValue,
  quoteValue,
  setHeader,
} from './headers.js';
import type { PlanLimits } from './plans.js';
import type { HeaderMap, UrlGroup, UrlGroupEndpoint } from './types.js';
import { isJsonObject } from './json.js';
import { refuseDotSegment } from './names.js';

const MAX_NAME_LENGTH = 256;

/**
 * Checks a URL-group or endpoint name. `.` and `..` pass here, so that a group stored with such
 * a name before they were refused can still be read and deleted; a name being created is also
 * checked with `refuseDotSegment` (core/names.ts).
 * @throws FerryError 400 naming the invalid name.
 */
export function checkName(name: string, what: string): string {
  if (name === '' || name.length > MAX_NAME_LENGTH || !NAME_PATTERN.test(name)) {
    throw badRequest(
      `invalid ${what} ${quoteValue(name)}: use 1–${MAX_NAME_LENGTH} letters, digits, "-", "_" or "."`,
    );
  }
  return name;
}

/** The `endpoints` array of a `{endpoints: [...]}` body, each element an object. */
function endpointObjects(body: unknown): Record<string, unknown>[] {
  if (!isJsonObject(body) || !Array.isArray(body.endpoints)) {
    throw badRequest('invalid body: expected {"endpoints": [{"url": "...", "name": "..."}]}');
  }
  if (body.endpoints.length === 0) throw badRequest('invalid body: "endpoints" is empty');
  return body.endpoints.map((item, i) => {
    if (!isJsonObject(item)) throw badRequest(`invalid endpoints[${i}]: expected an object`);
    return item;
  });
}

function optionalString(
  item: Record<string, unknown>,
  key: string,
  at: string,
): string | undefined {
  const value = item[key];
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value !== 'string') throw badRequest(`invalid ${at}.${key}: expected a string`);
  return value;
}

/** Parses the body of `POST /v2/topics/{name}/endpoints`: every endpoint needs a URL. */
export function parseEndpointsToAdd(body: unknown): UrlGroupEndpoint[] {
  return endpointObjects(body).map((item, i) => {
    const at = `endpoints[${i}]`;
    const url = optionalString(item, 'url', at);
    if (url === undefined) throw badRequest(`invalid ${at}: "url" is required`);
    const endpoint: UrlGroupEndpoint = { url: checkHttpUrl(url, `${at}.url`) };
    const name = optionalString(item, 'name', at);
    if (name !== undefined) {
      endpoint.name = refuseDotSegment(checkName(name, `${at}.name`), `${at}.name`);
    }
    return endpoint;
  });
}

/** Parses the body of `DELETE /v2/topics/{name}/endpoints`: each entry names a URL, a name or both. */
export function parseEndpointsToRemove(body: unknown): UrlGroupEndpoint[] {
  return endpointObjects(body).map((item, i) => {
    const at = `endpoints[${i}]`;
    const url = optionalString(item, 'url', at);
    const name = optionalString(item, 'name', at);
    if (url === undefined && name === undefined) {
      throw badRequest(`invalid ${at}: give "url", "name" or both`);
    }
    const ref: UrlGroupEndpoint = { url: url ?? '' };
    if (name !== undefined) ref.name = name;
    return ref;
  });
}

/**
 * The group after adding `endpoints` (a new group when `current` is undefined). A URL already in
 * the group stays one endpoint (a name given with it names it); a name belongs to one URL only.
 *
 * @throws FerryError 400 when a name is taken by another URL; 412 past the plan's
 *   `max_endpoints_per_topic`.
 */
export function withEndpointsAdded(p: {
  current: UrlGroup | undefined;
  accountId: string;
  name: string;
  endpoints: UrlGroupEndpoint[];
  plan: PlanLimits;
  now: number;
}): UrlGroup {
  const endpoints = (p.current?.endpoints ?? []).map((e) => ({ ...e }));
  for (const added of p.endpoints) {
    const sameUrl = endpoints.find((e) => e.url === added.url);
    if (added.name !== undefined) {
      const owner = endpoints.find((e) => e.name === added.name);
      if (owner && owner !== sameUrl) {
        throw badRequest(
          `endpoint name ${quoteValue(added.name)} is already used by ${quoteValue(owner.url)} in URL group ${quoteValue(p.name)}`,
        );
      }
    }
    if (sameUrl) {
      if (added.name !== undefined) sameUrl.name = added.name;
    } else {
      endpoints.push({ ...added });
    }
  }
  if (endpoints.length > p.plan.max_endpoints_per_topic) {
    throw limitExceeded(
      `URL group ${quoteValue(p.name)} would have ${endpoints.length} endpoints, more than the plan's max_endpoints_per_topic (${p.plan.max_endpoints_per_topic})`,
    );
  }
  const group: UrlGroup = {
    accountId: p.accountId,
    name: p.name,
    createdAt: p.current?.createdAt ?? p.now,
    updatedAt: p.now,
    endpoints,
  };
  if (p.current?.headers) group.headers = p.current.headers;
  return group;
}

/**
 * The endpoints left after removing `refs` (a ref with a URL and a name must match both).
 * @throws FerryError 404 naming a ref that matches no endpoint.
 */
export function endpointsAfterRemoving(
  group: UrlGroup,
  refs: UrlGroupEndpoint[],
): UrlGroupEndpoint[] {
  const matches = (e: UrlGroupEndpoint, ref: UrlGroupEndpoint): boolean =>
    (ref.url === '' || e.url === ref.url) && (ref.name === undefined || e.name === ref.name);
  for (const ref of refs) {
    if (!group.endpoints.some((e) => matches(e, ref))) {
      const what = [
        ref.url && `url ${quoteValue(ref.url)}`,
        ref.name && `name ${quoteValue(ref.name)}`,
      ]
        .filter(Boolean)
        .join(' and ');
      throw notFound(`URL group ${quoteValue(group.name)} has no endpoint with ${what}`);
    }
  }
  return group.endpoints.filter((e) => !refs.some((ref) => matches(e, ref)));
}

/** Longest list of default headers, so a group cannot make every publish to it huge. */
const MAX_DEFAULT_HEADERS = 100;

/**
 * Parses the body of `PATCH /v2/topics/{name}`: `{headers: {name: string | string[]}}`. Names
 * must be valid header names (stored in canonical case), values free of control characters. An
 * empty object removes every default.
 */
export function parseDefaultHeaders(body: unknown): HeaderMap {
  if (!isJsonObject(body) || !isJsonObject(body.headers)) {
    throw badRequest(
      'invalid body: expected {"headers": {"<Header-Name>": "value" or ["values"]}}',
    );
  }
  const entries = Object.entries(body.headers);
  if (entries.length > MAX_DEFAULT_HEADERS) {
    throw badRequest(`invalid headers: more than ${MAX_DEFAULT_HEADERS} default headers`);
  }
  const headers: HeaderMap = {};
  for (const [name, raw] of entries) {
    if (!isValidHeaderName(name)) throw badRequest(`invalid header name ${quoteValue(name)}`);
    const values = typeof raw === 'string' ? [raw] : raw;
    if (
      !Array.isArray(values) ||
      values.length === 0 ||
      !values.every((v): v is string => typeof v === 'string')
    ) {
      throw badRequest(
        `invalid headers.${canonicalHeaderName(name)}: expected a string or a non-empty array of strings`,
      );
    }
    for (const value of values) {
      if (!isValidHeaderValue(value)) {
        throw badRequest(
          `invalid headers.${canonicalHeaderName(name)} ${quoteValue(value)}: control characters are not allowed`,
        );
      }
    }
    setHeader(headers, name, values);
  }
  return headers;
}
