import { createHash } from 'node:crypto';
import { checkHttpUrl } from './destination.js';
import { parseDuration } from './duration.js';
import { badRequest, limitExceeded } from './errors.js';
import {
  HOP_BY_HOP_HEADERS,
  HeaderMapBuilder,
  canonicalHeaderName,
  isValidHeaderName,
  headerValueProblem,
  quoteValue,
} from './headers.js';
import { refuseDotSegment } from './names.js';
import type { PlanLimits } from './plans.js';
import { parseRedactFields, type Redaction } from './redaction.js';
import { compileRetryDelay } from './retry-delay.js';
import type { CallbackSpec, FlowControl, HeaderMap, HttpMethod } from './types.js';

/**
 * The settings of a publish request (`<P>-*` headers and their query-parameter forms), checked
 * against the plan. Pure: the API layer passes the request's headers, Ferry's query parameters
 * (see `parseDestination`), a URL group's default headers, the plan and the clock. Schedule and
 * queue headers are parsed elsewhere and ignored here.
 */

/** Node's `IncomingHttpHeaders` (lower-case names) or `headersDistinct`. */
export type IncomingHeaders = Record<string, string | string[] | undefined>;

export interface PublishSettings {
  /** `<P>-Method`, default POST. */
  method: HttpMethod;
  /**
   * What the destination receives, canonical names: `Content-Type` (when sent), every
   * `<P>-Forward-<X>` as `<X>`, and with header forwarding every other incoming header except
   * hop-by-hop ones, an `Authorization` with a Bearer token (Ferry's own credential: a webhook
   * sender's Basic or signature scheme is forwarded) and `<P>-*` headers.
   */
  headers: HeaderMap;
  /** `<P>-Header-Forward: true`. */
  headerForward: boolean;
  /** Retries after the first attempt: `<P>-Retries` or the plan's `default_retries`. */
  retries: number;
  /** `<P>-Retry-Delay`, trimmed; already validated by `compileRetryDelay`. */
  retryDelayExpression?: string;
  /** `<P>-Timeout` in ms, only when shorter than the plan's `timeout`. */
  timeoutMs?: number;
  /** Unix ms the message is first due: `<P>-Not-Before`, else now + `<P>-Delay`, else now. May be in the past. */
  notBefore: number;
  /** `<P>-Label` split on commas, trimmed, empty parts dropped; absent when none remain. */
  labels?: string[];
  /** `<P>-Deduplication-Id`, trimmed. */
  deduplicationId?: string;
  /** `<P>-Content-Based-Deduplication: true`. */
  contentBasedDeduplication: boolean;
  /** `<P>-Flow-Control-Key` with its `<P>-Flow-Control-Value`. */
  flowControl?: FlowControl;
  /** `<P>-Redact-Fields`. */
  redact?: Redaction;
  /** `<P>-Callback` and its `<P>-Callback-*` settings. */
  callback?: CallbackSpec;
  /** `<P>-Failure-Callback` and its `<P>-Failure-Callback-*` settings. */
  failureCallback?: CallbackSpec;
}

const METHODS: readonly HttpMethod[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

/** Longest label, deduplication id and flow-control key, in characters. */
const MAX_LABEL_LENGTH = 256;
const MAX_DEDUPLICATION_ID_LENGTH = 1024;
const MAX_FLOW_CONTROL_KEY_LENGTH = 256;
/** Longest flow-control period: one week (QStash's limit). */
const MAX_PERIOD_MS = 7 * 86_400_000;

/**
 * Reads and validates the settings of a publish request.
 *
 * Names are matched case-insensitively and built from `prefix`. Every setting may also come as a
 * query parameter named with the lower-case header name (`svc-retries=3`,
 * `svc-forward-x-token=abc`); a real header wins over the query parameter of the same name.
 * Several values of one setting (repeated headers or parameters) are joined with `", "`, as Node
 * joins repeated headers; several values of one forwarded header stay separate values. Unknown
 * `<P>-*` headers (SDK telemetry) are ignored and never forwarded.
 *
 * A URL group's default headers (`p.defaults`) count as if the publisher had sent them, except
 * where the publish itself has a header or query parameter of the same name: the publish wins.
 * A default that is not a `<P>-*` setting is a header for the destination, as if forwarded with
 * `<P>-Forward-<Name>`.
 *
 * @param p.query Ferry's query parameters (`parseDestination`); others are ignored.
 * @param p.defaults a URL group's default headers.
 * @param p.now Unix ms.
 * @param p.stored the settings were stored earlier and are read again (a schedule's tick):
 *   durations are read as they were accepted then, units in any order (`parseDuration`), and a
 *   flow-control key `.` or `..` (refused on a new publish, see core/names.ts) is accepted. A
 *   URL group's default headers are stored too: a setting that comes from them is read so,
 *   unless `p.newDefaults` (they are being set now, and checked as new input).
 * @throws FerryError 400 for a malformed setting, naming the header and its value; 412 when
 *   `<P>-Retries` exceeds the plan's `max_retries`, the delay exceeds `max_delay` or flow-control
 *   parallelism exceeds `max_parallelism`.
 */
export function parsePublishSettings(p: {
  prefix: string;
  headers: IncomingHeaders;
  query: URLSearchParams;
  defaults?: HeaderMap;
  plan: PlanLimits;
  now: number;
  stored?: boolean;
  newDefaults?: boolean;
}): PublishSettings {
  const input = collectInput(p.prefix, p.headers, p.query, p.defaults);
  /** The setting `field` names is stored input: read as it was accepted. */
  const stored = (field: string): boolean =>
    p.stored === true || (!p.newDefaults && input.defaulted.has(settingOf(field)));
  const duration: Durations = (text, field) =>
    parseDuration(text, field, { anyOrder: stored(field) });
  const names = settingNames(p.prefix);
  const name = (suffix: string): string => names(suffix).header;
  const get = (suffix: string): string | undefined => input.setting(names(suffix).lower);

  const headerForward = parseBoolean(get('Header-Forward'), name('Header-Forward'));
  const settings: PublishSettings = {
    method: parseMethod(get('Method'), name('Method')),
    headers: forwardedHeaders(p.prefix, input, headerForward),
    headerForward,
    retries: parseRetries(get('Retries'), name('Retries'), p.plan),
    notBefore: parseNotBefore(get('Not-Before'), get('Delay'), name, p.plan, p.now, duration),
    contentBasedDeduplication: parseBoolean(
      get('Content-Based-Deduplication'),
      name('Content-Based-Deduplication'),
    ),
  };

  const retryDelay = get('Retry-Delay');
  if (retryDelay !== undefined) {
    compileRetryDelay(retryDelay, name('Retry-Delay'));
    settings.retryDelayExpression = retryDelay.trim();
  }

  const timeout = get('Timeout');
  if (timeout !== undefined) {
    const ms = parseTimeout(timeout, name('Timeout'), duration);
    // Longer than the plan is not an error: the plan's timeout applies (interface.md: "It can
    // only shorten the plan default").
    if (ms < p.plan.timeout * 1_000) settings.timeoutMs = ms;
  }

  const labels = parseLabels(get('Label'), name('Label'));
  if (labels) settings.labels = labels;

  const dedupId = get('Deduplication-Id');
  if (dedupId !== undefined) {
    settings.deduplicationId = checkText(dedupId, name('Deduplication-Id'), {
      max: MAX_DEDUPLICATION_ID_LENGTH,
    });
  }

  const flowControl = parseFlowControl(
    get('Flow-Control-Key'),
    get('Flow-Control-Value'),
    name,
    p.plan,
    duration,
    stored(name('Flow-Control-Key')),
  );
  if (flowControl) settings.flowControl = flowControl;

  const redactFields = get('Redact-Fields');
  if (redactFields !== undefined) {
    const redact = parseRedactFields(redactFields, name('Redact-Fields'));
    if (redact) settings.redact = redact;
  }

  const callback = parseCallback(p.prefix, 'Callback', input, p.plan, duration);
  if (callback) settings.callback = callback;
  const failureCallback = parseCallback(p.prefix, 'Failure-Callback', input, p.plan, duration);
  if (failureCallback) settings.failureCallback = failureCallback;

  return settings;
}

/**
 * The content-based deduplication key: SHA-256 (hex) over the destination URL, the headers the
 * destination receives (which include `Content-Type` and the forwarded headers; names compared
 * case-insensitively and sorted, values in order) and the body. Length-safe: the URL and headers
 * are JSON-encoded before the body, so no two different inputs share a preimage. Scope it to the
 * account when storing it.
 */
export function contentDeduplicationKey(p: {
  url: string;
  body: Uint8Array;
  headers: HeaderMap;
}): string {
  const headers = Object.entries(p.headers)
    .map(([key, values]): [string, string[]] => [key.toLowerCase(), values])
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return createHash('sha256')
    .update(JSON.stringify([p.url, headers]))
    .update('\n')
    .update(p.body)
    .digest('hex');
}

// ---- input collection ---------------------------------------------------------------------

interface Input {
  /** Names of incoming headers, lower case, with their values as sent (header origin only). */
  headers: Map<string, string[]>;
  /** `<p>-*` names, lower case, with header values, or query values when no header has the name. */
  settings: Map<string, string[]>;
  /** A setting's values joined with ", ", or undefined when absent; `lower`: its name, lower case. */
  setting(lower: string): string | undefined;
  /** The settings (lower case) whose values are a URL group's defaults. */
  defaulted: ReadonlySet<string>;
}

/** The setting a field of an error message names: `Svc-Delay`, `Svc-Flow-Control-Value period`. */
const settingOf = (field: string): string => field.split(' ', 1)[0]?.toLowerCase() ?? '';

const NONE: ReadonlySet<string> = new Set();

/**
 * Every publish looks up some thirty settings by name, and a name built and lower-cased per
 * lookup was most of what parsing a plain publish allocated (a heap profile of the end-to-end
 * benchmark: 7.6 KB per publish in `parsePublishSettings`). The names depend only on the prefix,
 * a server setting, so each is built once.
 */
const namesByPrefix = new Map<string, Map<string, { header: string; lower: string }>>();

/** `suffix` → `<prefix>-<suffix>` as written in messages and its lower-case form, cached. */
function settingNames(prefix: string): (suffix: string) => { header: string; lower: string } {
  let names = namesByPrefix.get(prefix);
  if (names === undefined) {
    names = new Map<string, { header: string; lower: string }>();
    namesByPrefix.set(prefix, names);
  }
  const cache = names;
  return (suffix) => {
    let entry = cache.get(suffix);
    if (entry === undefined) {
      const header = `${prefix}-${suffix}`;
      entry = { header, lower: header.toLowerCase() };
      cache.set(suffix, entry);
    }
    return entry;
  };
}

function collectInput(
  prefix: string,
  headers: IncomingHeaders,
  query: URLSearchParams,
  defaults: HeaderMap | undefined,
): Input {
  const ferry = settingNames(prefix)('').lower;
  const fromHeaders = new Map<string, string[]>();
  const settings = new Map<string, string[]>();
  for (const rawName of Object.keys(headers)) {
    const value = headers[rawName];
    if (value === undefined) continue;
    const lower = rawName.toLowerCase();
    let list = fromHeaders.get(lower);
    if (list === undefined) {
      fromHeaders.set(lower, (list = []));
      if (lower.startsWith(ferry)) settings.set(lower, list);
    }
    if (typeof value === 'string') list.push(value);
    else for (const one of value) list.push(one);
  }
  for (const [key, value] of query) {
    const lower = key.toLowerCase();
    if (!lower.startsWith(ferry) || fromHeaders.has(lower)) continue;
    const list = settings.get(lower);
    if (list === undefined) settings.set(lower, [value]);
    else list.push(value);
  }
  const defaulted = defaults ? addDefaults(prefix, defaults, fromHeaders, settings) : NONE;
  return {
    headers: fromHeaders,
    settings,
    defaulted,
    setting: (lower) => {
      const values = settings.get(lower);
      // One value, the usual case, as is; an empty list is present and empty, as join makes it.
      return values?.length === 1 ? values[0] : values?.join(', ');
    },
  };
}

/**
 * Adds a URL group's default headers where the publish has none of that name. A default
 * `Content-Type` applies when the publish sent none; any other plain default is forwarded, unless
 * the publish forwards an incoming header of that name itself (header forwarding).
 *
 * @returns the `<p>-*` settings the defaults gave, lower case.
 */
function addDefaults(
  prefix: string,
  defaults: HeaderMap,
  fromHeaders: Map<string, string[]>,
  settings: Map<string, string[]>,
): Set<string> {
  const defaulted = new Set<string>();
  const ferry = `${prefix.toLowerCase()}-`;
  const entries = Object.entries(defaults).map(([name, values]): [string, string[]] => [
    name.toLowerCase(),
    values,
  ]);
  for (const [lower, values] of entries) {
    if (lower.startsWith(ferry) && !settings.has(lower)) {
      settings.set(lower, values);
      defaulted.add(lower);
    }
  }
  const forwardAll = settings.get(`${ferry}header-forward`)?.join(', ').trim().toLowerCase();
  for (const [lower, values] of entries) {
    if (lower.startsWith(ferry)) continue;
    if (lower === 'content-type') {
      if (!fromHeaders.has(lower)) fromHeaders.set(lower, values);
      continue;
    }
    const setting = `${ferry}forward-${lower}`;
    if (settings.has(setting) || (forwardAll === 'true' && fromHeaders.has(lower))) continue;
    settings.set(setting, values);
  }
  return defaulted;
}

/**
 * A Bearer `Authorization` is Ferry's own token (the API authenticates with the Bearer scheme
 * first, see api/auth.ts); any other scheme belongs to the sender and may be forwarded.
 */
const isBearer = (value: string): boolean => /^\s*bearer\s/i.test(value);

function forwardedHeaders(prefix: string, input: Input, headerForward: boolean): HeaderMap {
  const ferry = `${prefix.toLowerCase()}-`;
  const forwardPrefix = `${ferry}forward-`;
  const out = new HeaderMapBuilder();
  const add = (name: string, values: string[], source: string) => {
    for (const value of values) {
      const problem = headerValueProblem(value);
      if (problem !== undefined) {
        throw badRequest(`invalid ${canonicalHeaderName(source)} ${quoteValue(value)}: ${problem}`);
      }
      out.add(name, value);
    }
  };

  add('Content-Type', input.headers.get('content-type') ?? [], 'Content-Type');

  if (headerForward) {
    for (const [lower, values] of input.headers) {
      if (
        HOP_BY_HOP_HEADERS.has(lower) ||
        (lower === 'authorization' && values.some(isBearer)) ||
        lower === 'content-type' ||
        lower.startsWith(ferry) ||
        !isValidHeaderName(lower) // HTTP/2 pseudo-headers (":path") and the like
      ) {
        continue;
      }
      add(lower, values, lower);
    }
  }

  // Explicit forwards last: they replace a header of the same name taken from the request.
  for (const [lower, values] of input.settings) {
    if (!lower.startsWith(forwardPrefix)) continue;
    const source = canonicalHeaderName(lower);
    const target = lower.slice(forwardPrefix.length);
    if (target === '' || !isValidHeaderName(target)) {
      throw badRequest(
        `invalid header name ${quoteValue(source)}: expected ${prefix}-Forward-<Header-Name>`,
      );
    }
    if (HOP_BY_HOP_HEADERS.has(target)) {
      throw badRequest(
        `invalid header ${quoteValue(source)}: ${canonicalHeaderName(target)} cannot be forwarded, the delivery sets it`,
      );
    }
    out.set(target, []);
    add(target, values, source);
  }
  return out.build();
}

// ---- callbacks -------------------------------------------------------------------------------

/** The suffixes every publish looks for, per kind of callback: written once, not per publish. */
const CALLBACK_OWN = { Callback: 'Callback-', 'Failure-Callback': 'Failure-Callback-' } as const;
const CALLBACK_FORWARD = {
  Callback: 'Callback-Forward-',
  'Failure-Callback': 'Failure-Callback-Forward-',
} as const;

/**
 * `<P>-<kind>: <url>` with `<P>-<kind>-Forward-*`, `-Method`, `-Timeout`, `-Retries`,
 * `-Retry-Delay` and `-Delay`, validated like their publish counterparts. Settings without the
 * URL are a 400: they would silently do nothing.
 */
function parseCallback(
  prefix: string,
  kind: 'Callback' | 'Failure-Callback',
  input: Input,
  plan: PlanLimits,
  duration: Durations,
): CallbackSpec | undefined {
  const names = settingNames(prefix);
  const { header: base, lower: lowerBase } = names(kind);
  const get = (suffix: string): string | undefined =>
    input.setting(names(`${kind}-${suffix}`).lower);
  const urlText = input.setting(lowerBase);
  const forwardPrefix = names(CALLBACK_FORWARD[kind]).lower;
  const ownPrefix = names(CALLBACK_OWN[kind]).lower;
  // `<P>-Callback-…` names are not `<P>-Failure-Callback-…` ones, and the other way round.
  const own: string[] = [];
  for (const lower of input.settings.keys()) if (lower.startsWith(ownPrefix)) own.push(lower);
  if (urlText === undefined) {
    if (own.length > 0) {
      throw badRequest(`${canonicalHeaderName(own[0] ?? base)} requires ${base}: the URL to call`);
    }
    return undefined;
  }
  const url = checkHttpUrl(urlText, base);
  const headers = new HeaderMapBuilder();
  for (const lower of own) {
    if (!lower.startsWith(forwardPrefix)) continue;
    const target = lower.slice(forwardPrefix.length);
    const source = canonicalHeaderName(lower);
    if (target === '' || !isValidHeaderName(target)) {
      throw badRequest(`invalid header name ${quoteValue(source)}: cannot be forwarded`);
    }
    // Dropped, not refused: the callback request sets these itself, and the workflow support of
    // `@upstash/qstash` forwards every header its endpoint received (`Connection`, `Host`…).
    if (HOP_BY_HOP_HEADERS.has(target)) continue;
    for (const value of input.settings.get(lower) ?? []) {
      const problem = headerValueProblem(value);
      if (problem !== undefined) {
        throw badRequest(`invalid ${source} ${quoteValue(value)}: ${problem}`);
      }
      headers.add(target, value);
    }
  }
  const spec: CallbackSpec = {
    url,
    method: parseMethod(get('Method'), `${base}-Method`),
    headers: headers.build(),
  };
  const retries = get('Retries');
  if (retries !== undefined) spec.retries = parseRetries(retries, `${base}-Retries`, plan);
  const retryDelay = get('Retry-Delay');
  if (retryDelay !== undefined) {
    compileRetryDelay(retryDelay, `${base}-Retry-Delay`);
    spec.retryDelayExpression = retryDelay.trim();
  }
  const timeout = get('Timeout');
  if (timeout !== undefined) {
    const ms = parseTimeout(timeout, `${base}-Timeout`, duration);
    if (ms < plan.timeout * 1_000) spec.timeoutMs = ms;
  }
  const delay = get('Delay');
  if (delay !== undefined) {
    const ms = duration(delay, `${base}-Delay`);
    if (ms > plan.max_delay * 1_000) {
      throw limitExceeded(
        `${base}-Delay ${quoteValue(delay)} is more than the plan's max_delay (${plan.max_delay} s)`,
      );
    }
    if (ms > 0) spec.delayMs = ms;
  }
  return spec;
}

// ---- single settings ------------------------------------------------------------------------

function parseMethod(text: string | undefined, field: string): HttpMethod {
  if (text === undefined) return 'POST';
  const upper = text.trim().toUpperCase();
  const method = METHODS.find((m) => m === upper);
  if (!method) {
    throw badRequest(`invalid ${field} ${quoteValue(text)}: expected one of ${METHODS.join(', ')}`);
  }
  return method;
}

/** Parses a duration setting, ms (`parseDuration`, strict or as stored settings are read). */
type Durations = (text: string, field: string) => number;

/** A duration of more than 0, ms. */
function parseTimeout(text: string, field: string, duration: Durations): number {
  const ms = duration(text, field);
  if (ms === 0) throw badRequest(`invalid ${field} ${quoteValue(text)}: must be more than 0`);
  return ms;
}

/** `true` / `false`, any case; absent → false. */
function parseBoolean(text: string | undefined, field: string): boolean {
  if (text === undefined) return false;
  const lower = text.trim().toLowerCase();
  if (lower === 'true') return true;
  if (lower === 'false') return false;
  throw badRequest(`invalid ${field} ${quoteValue(text)}: expected true or false`);
}

/** A non-negative integer in decimal digits only: no sign, no decimals, no exponent. */
function parseNonNegativeInteger(text: string, field: string): number {
  const trimmed = text.trim();
  if (!/^\d+$/.test(trimmed)) {
    throw badRequest(`invalid ${field} ${quoteValue(text)}: expected a non-negative integer`);
  }
  const value = Number(trimmed);
  if (!Number.isSafeInteger(value))
    throw badRequest(`invalid ${field} ${quoteValue(text)}: too large`);
  return value;
}

function parseRetries(text: string | undefined, field: string, plan: PlanLimits): number {
  if (text === undefined) return plan.default_retries;
  const retries = parseNonNegativeInteger(text, field);
  if (retries > plan.max_retries) {
    throw limitExceeded(
      `${field} ${quoteValue(text)} is more than the plan's max_retries (${plan.max_retries})`,
    );
  }
  return retries;
}

function parseNotBefore(
  notBeforeText: string | undefined,
  delayText: string | undefined,
  name: (suffix: string) => string,
  plan: PlanLimits,
  now: number,
  duration: Durations,
): number {
  const maxDelayMs = plan.max_delay * 1_000;
  // Parsed even when Not-Before wins, so a malformed Delay is still reported.
  const delayMs = delayText === undefined ? undefined : duration(delayText, name('Delay'));
  if (notBeforeText !== undefined) {
    const field = name('Not-Before');
    const notBefore = parseNonNegativeInteger(notBeforeText, field) * 1_000;
    if (!Number.isSafeInteger(notBefore)) {
      throw badRequest(`invalid ${field} ${quoteValue(notBeforeText)}: too large`);
    }
    // The plan's delay limit applies to both forms; otherwise Not-Before would bypass it.
    if (notBefore - now > maxDelayMs) {
      throw limitExceeded(
        `${field} ${quoteValue(notBeforeText)} is further ahead than the plan's max_delay (${plan.max_delay} s); it is Unix seconds`,
      );
    }
    return notBefore;
  }
  if (delayMs !== undefined && delayText !== undefined) {
    if (delayMs > maxDelayMs) {
      throw limitExceeded(
        `${name('Delay')} ${quoteValue(delayText)} is more than the plan's max_delay (${plan.max_delay} s)`,
      );
    }
    return now + delayMs;
  }
  return now;
}

/**
 * Labels: 1–256 characters each, any printable characters (no control characters); commas
 * separate labels, so a label never contains one. Anything stricter would reject labels users
 * already send to QStash, and the storage layer matches labels as bound parameters.
 */
function parseLabels(text: string | undefined, field: string): string[] | undefined {
  if (text === undefined) return undefined;
  const labels = text
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part !== '');
  for (const label of labels) checkText(label, field, { max: MAX_LABEL_LENGTH, display: text });
  return labels.length > 0 ? labels : undefined;
}

/** Trims `text` and checks it is non-empty, at most `max` characters and free of control characters. */
function checkText(
  text: string,
  field: string,
  opts: { max: number; display?: string; noSpaces?: boolean },
): string {
  const fail = (problem: string) =>
    badRequest(`invalid ${field} ${quoteValue(opts.display ?? text)}: ${problem}`);
  const trimmed = text.trim();
  if (trimmed === '') throw fail('must not be empty');
  if ([...trimmed].length > opts.max) {
    throw fail(`${quoteValue(trimmed, 32)} is longer than ${opts.max} characters`);
  }
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(trimmed)) throw fail('control characters are not allowed');
  if (opts.noSpaces && /\s/.test(trimmed)) throw fail('spaces are not allowed');
  return trimmed;
}

/**
 * @param stored the settings are read again (a schedule's tick): a key stored before `.` and `..`
 *   were refused keeps working there.
 */
function parseFlowControl(
  keyText: string | undefined,
  valueText: string | undefined,
  name: (suffix: string) => string,
  plan: PlanLimits,
  duration: Durations,
  stored: boolean,
): FlowControl | undefined {
  const keyField = name('Flow-Control-Key');
  const valueField = name('Flow-Control-Value');
  if (keyText === undefined && valueText === undefined) return undefined;
  if (keyText === undefined) throw badRequest(`${valueField} requires ${keyField}`);
  if (valueText === undefined) throw badRequest(`${keyField} requires ${valueField}`);

  const key = checkText(keyText, keyField, { max: MAX_FLOW_CONTROL_KEY_LENGTH, noSpaces: true });
  if (!stored) refuseDotSegment(key, keyField);
  const fail = (problem: string) =>
    badRequest(`invalid ${valueField} ${quoteValue(valueText)}: ${problem}`);
  const fields = new Map<string, string>();
  for (const raw of valueText.split(',')) {
    const part = raw.trim();
    if (part === '') continue;
    const eq = part.indexOf('=');
    if (eq === -1) throw fail(`expected <name>=<value>, got ${quoteValue(part)}`);
    const field = part.slice(0, eq).trim().toLowerCase();
    if (field !== 'parallelism' && field !== 'rate' && field !== 'period') {
      throw fail(`unknown setting ${quoteValue(field)} (use parallelism, rate, period)`);
    }
    if (fields.has(field)) throw fail(`${field} is given twice`);
    fields.set(field, part.slice(eq + 1).trim());
  }

  const positive = (field: string): number | undefined => {
    const text = fields.get(field);
    if (text === undefined) return undefined;
    if (!/^\d+$/.test(text) || !Number.isSafeInteger(Number(text)) || Number(text) === 0) {
      throw fail(`${field} must be a positive integer, got ${quoteValue(text)}`);
    }
    return Number(text);
  };
  const parallelism = positive('parallelism');
  const rate = positive('rate');
  if (parallelism === undefined && rate === undefined) {
    throw fail('expected at least one of parallelism and rate');
  }
  if (parallelism !== undefined && parallelism > plan.max_parallelism) {
    throw limitExceeded(
      `${valueField} parallelism ${parallelism} is more than the plan's max_parallelism (${plan.max_parallelism})`,
    );
  }

  let periodSec = 1;
  const periodText = fields.get('period');
  if (periodText !== undefined) {
    const ms = duration(periodText, `${valueField} period`);
    if (ms === 0) throw fail('period must be more than 0');
    if (ms > MAX_PERIOD_MS) throw fail('period must be at most 7d');
    periodSec = ms / 1_000;
  }

  const flowControl: FlowControl = { key, periodSec };
  if (parallelism !== undefined) flowControl.parallelism = parallelism;
  if (rate !== undefined) flowControl.rate = rate;
  return flowControl;
}
