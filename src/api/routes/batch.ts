/**
 * `POST /v2/batch`: many publishes in one request, `[{destination, body?, headers?, queue?}]`.
 * All or nothing: every entry is validated first (destination, headers, settings, workflow run
 * state, body size, the plan limits known up front), and the first invalid entry fails the whole
 * request, naming it, before anything is stored. QStash gives per-entry results only when every
 * message is valid, and the workflow SDK reads a 400 from here as "this run has ended". The valid
 * entries are stored in one transaction (one publisher call); no element of a 200 is an error.
 */
import type { FastifyInstance } from 'fastify';
import { badRequest, FerryError, limitExceeded } from '../../core/errors.js';
import { quoteValue } from '../../core/headers.js';
import type { IncomingHeaders } from '../../core/publish-request.js';
import { hopsOf } from '../../core/hops.js';
import type { Account } from '../../core/types.js';
import type { PlanLimits } from '../../core/plans.js';
import type { ApiContext } from '../context.js';
import { admitRequest } from '../limits.js';
import { checkRequestCaps } from '../request-caps.js';
import { jsonBody } from '../json-body.js';
import { checkBodySize, preparePublish, publishResponse, type PreparedPublish } from './publish.js';
import { parseDestination } from '../../core/destination.js';
import { checkQueueName, ensureQueue } from './queues.js';
import { isJsonObject } from '../../core/json.js';

/** Most entries in one batch. */
export const MAX_BATCH_ENTRIES = 1_000;

/**
 * Most header values in one entry: what Node reads of one publish request's headers
 * (`maxHeadersCount`), so a batch entry can carry no more than the same publish sent alone.
 */
export const MAX_ENTRY_HEADER_VALUES = 2_000;

/** An entry's `headers`: `{name: string | string[]}` as incoming headers (lower-case names). */
function entryHeaders(raw: unknown): IncomingHeaders {
  if (raw === undefined || raw === null) return {};
  if (!isJsonObject(raw)) throw badRequest('invalid headers: expected an object of header values');
  const headers: Record<string, string[]> = {};
  let count = 0;
  for (const [name, value] of Object.entries(raw)) {
    const values = typeof value === 'string' ? [value] : value;
    if (!Array.isArray(values) || !values.every((v): v is string => typeof v === 'string')) {
      throw badRequest(`invalid headers.${name}: expected a string or an array of strings`);
    }
    count += values.length;
    if (count > MAX_ENTRY_HEADER_VALUES) {
      throw badRequest(
        `invalid headers: more than ${MAX_ENTRY_HEADER_VALUES} header values (at most what one publish request may carry)`,
      );
    }
    // Names differing only in case are one header, their values in order.
    const lower = name.toLowerCase();
    const existing = headers[lower];
    if (existing === undefined) headers[lower] = [...values];
    else existing.push(...values);
  }
  return headers;
}

function entryBody(raw: unknown, plan: PlanLimits): Uint8Array {
  if (raw === undefined || raw === null) return new Uint8Array(0);
  // A JSON value other than a string is sent as its JSON text: the workflow SDK's `context.call`
  // passes the user's body object through as it is.
  const text = typeof raw === 'string' ? raw : JSON.stringify(raw);
  return checkBodySize(Buffer.from(text, 'utf8'), plan);
}

/** A valid entry: its messages, and the queue it joins (created only once all are valid). */
interface PreparedEntry extends PreparedPublish {
  queue?: string;
}

async function prepareEntry(
  ctx: ApiContext,
  account: Account,
  entry: unknown,
  callerIp: string,
): Promise<PreparedEntry> {
  if (!isJsonObject(entry))
    throw badRequest('expected an object {destination, body?, headers?, queue?}');
  const { destination: raw } = entry;
  if (typeof raw !== 'string' || raw === '') {
    throw badRequest('"destination" is required: a URL or a URL-group name');
  }
  const queue =
    entry.queue === undefined || entry.queue === null ? undefined : checkQueueName(entry.queue);
  const q = raw.indexOf('?');
  const { destination, query } = parseDestination({
    rawPath: q === -1 ? raw : raw.slice(0, q),
    rawQuery: q === -1 ? '' : raw.slice(q + 1),
    prefix: ctx.prefix,
  });
  const plan = ctx.accounts.limits(account);
  const prepared = await preparePublish(ctx, {
    account,
    destination,
    headers: entryHeaders(entry.headers),
    query,
    body: entryBody(entry.body, plan),
    callerIp,
  });
  // The entry joins the queue (`queue` is the batch form of POST /v2/enqueue/{queue}/…).
  if (queue !== undefined) for (const item of prepared.items) item.message.queueName = queue;
  return queue === undefined ? prepared : { ...prepared, queue };
}

/** The error of entry `index`, named; its status is what the same publish would get alone. */
function entryError(index: number, error: FerryError): FerryError {
  return new FerryError(error.status, `entry ${index}: ${error.message}`);
}

/**
 * Entries whose preparation starts in one turn of the event loop. Preparing is synchronous up to
 * an entry's first storage read, and 1,000 entries held the event loop for 10–40 ms in one turn
 * (docs/reliability.md, section 4): other requests waited that long.
 */
const ENTRIES_PER_TURN = 100;

/** The promise's outcome, with its rejection handled at once (it may settle before the rest). */
function settle<T>(promise: Promise<T>): Promise<PromiseSettledResult<T>> {
  return promise.then(
    (value) => ({ status: 'fulfilled', value }),
    (reason: unknown) => ({ status: 'rejected', reason }),
  );
}

/**
 * Every entry prepared, or the first invalid one's error. Entries are prepared concurrently (each
 * may read a URL group or a workflow run), so "first" is by position, not by time.
 */
async function prepareEntries(
  ctx: ApiContext,
  account: Account,
  entries: unknown[],
  callerIp: string,
): Promise<PreparedEntry[]> {
  const pending: Promise<PromiseSettledResult<PreparedEntry>>[] = [];
  for (let i = 0; i < entries.length; i += ENTRIES_PER_TURN) {
    if (i > 0) await new Promise((resolve) => setImmediate(resolve));
    for (const entry of entries.slice(i, i + ENTRIES_PER_TURN)) {
      pending.push(settle(prepareEntry(ctx, account, entry, callerIp)));
    }
  }
  const settled = await Promise.all(pending);
  const prepared: PreparedEntry[] = [];
  for (const [i, result] of settled.entries()) {
    if (result.status === 'fulfilled') {
      prepared.push(result.value);
      continue;
    }
    const error: unknown = result.reason;
    if (error instanceof FerryError && error.status < 500) throw entryError(i, error);
    throw error;
  }
  return prepared;
}

/**
 * The queues the batch creates, checked against `max_queues` before anything is stored.
 * @throws FerryError 412 naming the first entry whose new queue is one too many.
 */
async function newQueues(
  ctx: ApiContext,
  account: Account,
  prepared: PreparedEntry[],
): Promise<string[]> {
  if (!prepared.some((p) => p.queue !== undefined)) return [];
  const existing = await ctx.executor.flowGateList({ accountId: account.id, kind: 'queue' });
  const names = new Set(existing.map((gate) => gate.name));
  const maxQueues = ctx.accounts.limits(account).max_queues;
  const created: string[] = [];
  for (const [i, { queue }] of prepared.entries()) {
    if (queue === undefined || names.has(queue)) continue;
    if (names.size >= maxQueues) {
      throw limitExceeded(
        `entry ${i}: queue ${quoteValue(queue)} would be more than max_queues (${maxQueues})`,
      );
    }
    names.add(queue);
    created.push(queue);
  }
  return created;
}

export function batchRoutes(app: FastifyInstance, ctx: ApiContext): void {
  app.post('/v2/batch', async (request, reply) => {
    // An entry's `body` is the message body: bytes, which may hold NUL.
    const entries = jsonBody(request, undefined, (path) => /^entry \d+\.body$/.test(path));
    if (!Array.isArray(entries)) {
      throw badRequest('invalid body: expected a JSON array of {destination, body?, headers?}');
    }
    if (entries.length > MAX_BATCH_ENTRIES) {
      throw badRequest(`batch of ${entries.length} entries: at most ${MAX_BATCH_ENTRIES} allowed`);
    }
    const hops = hopsOf(ctx.prefix, request.headers);
    const account = request.account;
    const prepared = await prepareEntries(ctx, account, entries, request.ip);
    const queues = await newQueues(ctx, account, prepared);
    const items = prepared.flatMap((p) => p.items);
    for (const item of items) {
      item.kind = 'batch';
      if (hops !== undefined) item.message.spec.hops = hops;
    }
    checkRequestCaps(
      ctx.requestCaps,
      items.map((item) => item.message),
    );
    await admitRequest(ctx, request, reply, items.length);
    // Only a valid, admitted batch creates its queues. A queue that another request took the
    // last `max_queues` place from meanwhile fails the batch (412) before any message is stored.
    const results = await ctx.admission.run(items.length, async () => {
      for (const name of queues) await ensureQueue(ctx, account, name);
      return items.length > 0 ? ctx.publisher.publish(items) : [];
    });
    let next = 0;
    return prepared.map((p) => {
      const mine = results.slice(next, next + p.items.length);
      next += p.items.length;
      return publishResponse(p, mine).body;
    });
  });
}
