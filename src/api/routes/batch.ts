/**
 * `POST /v2/batch`: many publishes in one request, `[{destination, body?, headers?, queue?}]`.
 * Each entry is validated on its own: an entry that fails answers `{error}` in its place while
 * the others go through. Every accepted entry is stored in one transaction (one publisher call).
 */
import type { FastifyInstance } from 'fastify';
import { badRequest, FerryError } from '../../core/errors.js';
import type { IncomingHeaders } from '../../core/publish-request.js';
import type { Account } from '../../core/types.js';
import type { PlanLimits } from '../../core/plans.js';
import type { PublishItem } from '../../engine/publisher.js';
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

/** An entry's `headers`: `{name: string | string[]}` as incoming headers (lower-case names). */
function entryHeaders(raw: unknown): IncomingHeaders {
  if (raw === undefined || raw === null) return {};
  if (!isJsonObject(raw)) throw badRequest('invalid headers: expected an object of header values');
  const headers: IncomingHeaders = {};
  for (const [name, value] of Object.entries(raw)) {
    const values = typeof value === 'string' ? [value] : value;
    if (!Array.isArray(values) || !values.every((v): v is string => typeof v === 'string')) {
      throw badRequest(`invalid headers.${name}: expected a string or an array of strings`);
    }
    const lower = name.toLowerCase();
    const existing = headers[lower];
    headers[lower] = existing === undefined ? values : [...[existing].flat(), ...values];
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

async function prepareEntry(
  ctx: ApiContext,
  account: Account,
  entry: unknown,
  callerIp: string,
): Promise<PreparedPublish> {
  if (!isJsonObject(entry))
    throw badRequest('expected an object {destination, body?, headers?, queue?}');
  const { destination: raw } = entry;
  if (typeof raw !== 'string' || raw === '') {
    throw badRequest('"destination" is required: a URL or a URL-group name');
  }
  const queue = entry.queue === undefined || entry.queue === null ? undefined : entry.queue;
  if (queue !== undefined) await ensureQueue(ctx, account, checkQueueName(queue));
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
  if (typeof queue === 'string') for (const item of prepared.items) item.message.queueName = queue;
  return prepared;
}

export function batchRoutes(app: FastifyInstance, ctx: ApiContext): void {
  app.post('/v2/batch', async (request, reply) => {
    const entries = jsonBody(request);
    if (!Array.isArray(entries)) {
      throw badRequest('invalid body: expected a JSON array of {destination, body?, headers?}');
    }
    if (entries.length > MAX_BATCH_ENTRIES) {
      throw badRequest(`batch of ${entries.length} entries: at most ${MAX_BATCH_ENTRIES} allowed`);
    }
    const account = request.account;
    const prepared = await Promise.all(
      entries.map((entry) =>
        prepareEntry(ctx, account, entry, request.ip).catch((error: unknown) => {
          if (error instanceof FerryError && error.status < 500) return error;
          throw error;
        }),
      ),
    );
    const items: PublishItem[] = [];
    for (const p of prepared) if (!(p instanceof FerryError)) items.push(...p.items);
    checkRequestCaps(
      ctx.requestCaps,
      items.map((item) => item.message),
    );
    await admitRequest(ctx, request, reply, items.length);
    const results = items.length > 0 ? await ctx.publisher.publish(items) : [];
    let next = 0;
    return prepared.map((p, i) => {
      if (p instanceof FerryError) return { error: `entry ${i}: ${p.message}` };
      const mine = results.slice(next, next + p.items.length);
      next += p.items.length;
      return publishResponse(p, mine).body;
    });
  });
}
