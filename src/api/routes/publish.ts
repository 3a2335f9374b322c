/**
 * `POST /v2/publish/{destination}`: validate, store durably (group commit), answer. The
 * destination is everything after `/v2/publish/` in the raw URL, so `https://` survives and the
 * destination's own query string is kept (minus Ferry's own parameters).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { isIP } from 'node:net';
import { isLocalHostname, isPrivateAddress } from '../../core/addresses.js';
import { badRequest, notFound, tooLarge } from '../../core/errors.js';
import { buildMessage } from '../../core/build-message.js';
import { parseDestination } from '../../core/destination.js';
import {
  contentDeduplicationKey,
  parsePublishSettings,
  type PublishSettings,
} from '../../core/publish-request.js';
import type { PlanLimits } from '../../core/plans.js';
import type { Message } from '../../core/types.js';
import type { ApiContext } from '../context.js';

/** Moved to core (the scheduler builds messages too); re-exported for existing importers. */
export { buildMessage };

const EMPTY = new Uint8Array(0);

export function bodyOf(request: FastifyRequest, limits: PlanLimits): Uint8Array {
  const body = request.body;
  const bytes = body instanceof Uint8Array ? body : EMPTY;
  if (bytes.byteLength > limits.max_message_size) {
    throw tooLarge(
      `body of ${bytes.byteLength} bytes is larger than max_message_size (${limits.max_message_size})`,
    );
  }
  return bytes;
}

/** Refuses private and loopback destinations in production mode (checked again on connect). */
export function checkDestinationAllowed(url: string, production: boolean): void {
  if (!production) return;
  const host = new URL(url).hostname.replace(/^\[|\]$/g, '');
  if (isLocalHostname(host) || (isIP(host) !== 0 && isPrivateAddress(host))) {
    throw badRequest(
      `destination "${url}" is a private or loopback address (refused in production mode)`,
    );
  }
}

/**
 * The destination of a `…/{destination}` route (publish, schedules): everything after `path` in
 * the raw request URL, undecoded, with Ferry's own query parameters apart (`parseDestination`).
 */
export function destinationOf(
  request: FastifyRequest,
  path: string,
  prefix: string,
): ReturnType<typeof parseDestination> {
  const raw = request.raw.url ?? request.url;
  const start = raw.indexOf(path) + path.length;
  const q = raw.indexOf('?', start);
  return parseDestination({
    rawPath: q === -1 ? raw.slice(start) : raw.slice(start, q),
    rawQuery: q === -1 ? '' : raw.slice(q + 1),
    prefix,
  });
}

export function dedupKeyOf(settings: PublishSettings, message: Message): string | undefined {
  if (settings.deduplicationId !== undefined) return `id:${settings.deduplicationId}`;
  if (!settings.contentBasedDeduplication) return undefined;
  return `content:${contentDeduplicationKey({ url: message.url, body: message.body, headers: message.spec.headers })}`;
}

export function publishRoutes(app: FastifyInstance, ctx: ApiContext): void {
  app.post('/v2/publish/*', async (request, reply) => {
    const account = request.account;
    const limits = ctx.accounts.limits(account);
    const { destination, query } = destinationOf(request, '/v2/publish/', ctx.prefix);
    if (destination.kind === 'group') {
      throw notFound(`URL group "${destination.name}" not found`);
    }
    const body = bodyOf(request, limits);
    const now = ctx.clock.now();
    const settings = parsePublishSettings({
      prefix: ctx.prefix,
      headers: request.headers,
      query,
      plan: limits,
      now,
    });
    checkDestinationAllowed(destination.url, ctx.production);
    const message = buildMessage({
      account,
      url: destination.url,
      settings,
      body,
      callerIp: request.ip,
      now,
    });
    const [result] = await ctx.publisher.publish([
      { message, dedupKey: dedupKeyOf(settings, message) },
    ]);
    if (!result) throw new Error('publisher returned no result');
    if (result.deduplicated) {
      return reply.code(202).send({ messageId: result.messageId, deduplicated: true });
    }
    return { messageId: result.messageId };
  });
}
