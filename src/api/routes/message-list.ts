/**
 * `GET /v2/messages?…` (a Ferry extension): the account's messages that are not final yet
 * (waiting for their first attempt, delayed, being delivered, waiting for a retry), newest
 * first, with the filters of the bulk cancel `DELETE /v2/messages?…`, cursor paged and bounded
 * like the other lists (`list-page.ts`), bodies cut by `bodyCut`.
 */
import type { FastifyInstance } from 'fastify';
import { badRequest } from '../../core/errors.js';
import type { MessageState } from '../../storage/driver.js';
import type { ApiContext } from '../context.js';
import { BODY_CUT_PARAM, boundedPage, itemBytes, parseBodyCut, sendPage } from '../list-page.js';
import { messageJson, messageStateJson, STATE_NAMES } from '../presenters.js';
import { parseQuery } from '../query.js';
import { CANCEL_FILTERS, searchParams } from './messages.js';

const DEFAULT_COUNT = 100;

/** The API's state names back to storage's (the reverse of the presenter's `STATE_NAMES`). */
const STATES: Record<string, MessageState> = Object.fromEntries(
  Object.entries(STATE_NAMES).map(([state, name]) => [name, state as MessageState]),
);

/** `state=…` (repeatable: any of them), as the messages' `state` field spells it. */
function parseStates(values: string[]): MessageState[] | undefined {
  if (values.length === 0) return undefined;
  return values.map((value) => {
    const state = STATES[value.toUpperCase()];
    if (state === undefined) {
      throw badRequest(
        `invalid state ${JSON.stringify(value)} (known: ${Object.keys(STATES).join(', ')})`,
      );
    }
    return state;
  });
}

export function messageListRoute(app: FastifyInstance, ctx: ApiContext): void {
  app.get('/v2/messages', async (request, reply) => {
    const params = searchParams(request.url);
    const { filter, cursor, count } = parseQuery(params, {
      filters: CANCEL_FILTERS,
      maxCount: 100,
      cursor: { idPrefix: 'msg' },
      extra: [BODY_CUT_PARAM, 'state'],
    });
    const bodyCut = parseBodyCut(params);
    const states = parseStates(params.getAll('state'));
    const now = ctx.clock.now();
    const result = await boundedPage({
      count: count ?? DEFAULT_COUNT,
      cursor,
      fetch: (after, n) =>
        ctx.executor.messageList({
          accountId: request.account.id,
          filter,
          count: n,
          bodyCut,
          now,
          ...(states === undefined ? {} : { states }),
          ...(after === undefined ? {} : { cursor: after }),
        }),
      cursorOf: (listed) => listed.message.id,
      present: (listed) => ({
        ...messageJson(listed.message, listed.bodySize),
        ...(listed.state && messageStateJson(listed.message, listed.state)),
      }),
      itemBytes: itemBytes(bodyCut),
    });
    return sendPage(reply, 'messages', result);
  });
}
