/**
 * Cron schedules: `POST /v2/schedules/{destination}` (create or replace), `GET /v2/schedules`,
 * `GET`/`DELETE /v2/schedules/{id}`, `POST`/`PATCH /v2/schedules/{id}/pause|resume`.
 *
 * A schedule stores the create request's publish settings as sent and the scheduler replays them
 * at each tick (`scheduler/messages-for-tick.ts`); here they are read once with the same code to
 * refuse bad settings at creation, not at the first tick.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { specOf } from '../../core/build-message.js';
import type { Destination } from '../../core/destination.js';
import { parseCron } from '../../core/cron.js';
import { badRequest, limitExceeded, notFound } from '../../core/errors.js';
import { newScheduleId } from '../../core/ids.js';
import { parseName, type Schedule, type ScheduleRequest } from '../../core/schedule.js';
import type { EventState } from '../../core/types.js';
import { scheduleSettings } from '../../scheduler/messages-for-tick.js';
import type { ApiContext } from '../context.js';
import { PAGE_BUDGET_BYTES, parseBodyCut } from '../list-page.js';
import { scheduleJson } from '../schedule-presenter.js';
import { checkCallbacksAllowed, checkDestinationAllowed } from '../destination-guard.js';
import { searchParams as listQuery } from './messages.js';
import { bodyOf, destinationOf } from './publish.js';

/**
 * The part of the request the settings are read from, to store: Ferry's own headers and query
 * parameters, `Content-Type`, and with `headerForward` every other header (publish forwards them
 * then). Never `Authorization` or a token parameter: a schedule must not keep credentials.
 */
function storedRequest(
  request: FastifyRequest,
  query: URLSearchParams,
  prefix: string,
  headerForward: boolean,
): ScheduleRequest {
  const ferry = `${prefix.toLowerCase()}-`;
  const headers: Record<string, string[]> = {};
  for (const [name, value] of Object.entries(request.headers)) {
    const lower = name.toLowerCase();
    if (value === undefined || lower === 'authorization') continue;
    if (!headerForward && !lower.startsWith(ferry) && lower !== 'content-type') continue;
    headers[lower] = Array.isArray(value) ? value : [value];
  }
  const settings = [...query].filter(([key]) => key.toLowerCase().startsWith(ferry));
  return { headers, query: settings };
}

const destinationUrl = (d: Destination): string => (d.kind === 'url' ? d.url : '');

export function scheduleRoutes(app: FastifyInstance, ctx: ApiContext): void {
  const name = (suffix: string) => `${ctx.prefix}-${suffix}`;

  /** A schedule-only setting from its header, else its query parameter. */
  const setting = (
    request: FastifyRequest,
    query: URLSearchParams,
    suffix: string,
  ): string | undefined => {
    const header = request.headers[name(suffix).toLowerCase()];
    if (header !== undefined) return Array.isArray(header) ? header.join(', ') : header;
    const lower = name(suffix).toLowerCase();
    for (const [key, value] of query) if (key.toLowerCase() === lower) return value;
    return undefined;
  };

  app.post('/v2/schedules/*', async (request) => {
    const account = request.account;
    const limits = ctx.accounts.limits(account);
    const { destination, query } = destinationOf(request, '/v2/schedules/', ctx.prefix);
    const group =
      destination.kind === 'group'
        ? await ctx.executor.urlGroupGet({ accountId: account.id, name: destination.name })
        : undefined;
    if (destination.kind === 'group' && !group) {
      throw notFound(`URL group "${destination.name}" not found`);
    }

    const cronText = setting(request, query, 'Cron');
    if (cronText === undefined) {
      throw badRequest(`missing ${name('Cron')}: expected a cron expression such as "*/5 * * * *"`);
    }
    const cron = parseCron(cronText, name('Cron'));
    const idText = setting(request, query, 'Schedule-Id');
    const queueText = setting(request, query, 'Queue-Name');
    if (setting(request, query, 'Not-Before') !== undefined) {
      throw badRequest(
        `${name('Not-Before')} is not supported on schedules: use ${name('Delay')}, counted from each tick`,
      );
    }
    const now = ctx.clock.now();
    const id = idText === undefined ? newScheduleId(now) : parseName(idText, name('Schedule-Id'));
    const queueName =
      queueText === undefined ? undefined : parseName(queueText, name('Queue-Name'));
    const body = bodyOf(request, limits);

    const everything = storedRequest(request, query, ctx.prefix, true);
    const settings = scheduleSettings({
      request: everything,
      prefix: ctx.prefix,
      plan: limits,
      tick: now,
      defaults: group?.headers,
    });
    for (const url of group ? group.endpoints.map((e) => e.url) : [destinationUrl(destination)]) {
      checkDestinationAllowed(url, ctx.production);
    }
    checkCallbacksAllowed(settings, ctx.production, ctx.prefix);

    const schedule: Schedule = {
      id,
      accountId: account.id,
      cron: cron.text,
      destination: destination.kind === 'url' ? destination.url : destination.name,
      createdAt: now,
      paused: false,
      request: settings.headerForward
        ? everything
        : storedRequest(request, query, ctx.prefix, false),
      spec: {
        ...specOf(settings),
        retries: settings.retries,
        delayMs: settings.notBefore > now ? settings.notBefore - now : undefined,
      },
      body,
      callerIp: request.ip,
      queueName,
      nextScheduleTime: cron.next(now),
    };
    const result = await ctx.executor.scheduleUpsert({
      schedule,
      maxSchedules: limits.max_schedules,
    });
    if (result === 'limit') {
      throw limitExceeded(
        `exceeded the maximum number of schedules: the plan's max_schedules is ${limits.max_schedules}`,
      );
    }
    ctx.onSchedulesChanged();
    return { scheduleId: id };
  });

  app.get('/v2/schedules', async (request) => {
    // The answer is one array (no pages): each body is cut so that all of them together stay
    // within a page's budget, whatever max_schedules allows.
    const limits = ctx.accounts.limits(request.account);
    const share = Math.floor(PAGE_BUDGET_BYTES / Math.max(1, limits.max_schedules));
    const schedules = await ctx.executor.scheduleList({
      accountId: request.account.id,
      bodyCut: Math.min(parseBodyCut(listQuery(request.url)), Math.max(1024, share)),
    });
    return Promise.all(schedules.map(async (s) => scheduleJson(s, await lastStates(ctx, s))));
  });

  app.get<{ Params: { id: string } }>('/v2/schedules/:id', async (request) => {
    const schedule = await getOr404(ctx, request.account.id, request.params.id);
    return scheduleJson(schedule, await lastStates(ctx, schedule));
  });

  app.delete<{ Params: { id: string } }>('/v2/schedules/:id', async (request) => {
    const deleted = await ctx.executor.scheduleDelete({
      accountId: request.account.id,
      id: request.params.id,
    });
    if (!deleted) throw scheduleNotFound(request.params.id);
    return { deleted: 1 };
  });

  for (const method of ['POST', 'PATCH'] as const) {
    app.route<{ Params: { id: string } }>({
      method,
      url: '/v2/schedules/:id/pause',
      handler: async (request) => {
        const { id } = request.params;
        const accountId = request.account.id;
        if (!(await ctx.executor.scheduleSetPaused({ accountId, id, paused: true }))) {
          throw scheduleNotFound(id);
        }
        return { scheduleId: id, isPaused: true };
      },
    });
    app.route<{ Params: { id: string } }>({
      method,
      url: '/v2/schedules/:id/resume',
      handler: async (request) => {
        const { id } = request.params;
        const accountId = request.account.id;
        const schedule = await getOr404(ctx, accountId, id);
        if (schedule.paused) {
          // Ticks missed while paused are skipped: the next one is the first after now.
          const nextScheduleTime = parseCron(schedule.cron, 'cron').next(ctx.clock.now());
          const found = await ctx.executor.scheduleSetPaused({
            accountId,
            id,
            paused: false,
            nextScheduleTime,
          });
          if (!found) throw scheduleNotFound(id);
          ctx.onSchedulesChanged();
        }
        return { scheduleId: id, isPaused: false };
      },
    });
  }
}

const scheduleNotFound = (id: string) => notFound(`schedule "${id}" not found`);

async function getOr404(ctx: ApiContext, accountId: string, id: string): Promise<Schedule> {
  const schedule = await ctx.executor.scheduleGet({ accountId, id });
  if (!schedule) throw scheduleNotFound(id);
  return schedule;
}

/** Events read per message of the last tick to find its newest state. */
const EVENTS_PER_MESSAGE = 20;

/**
 * The current state of each message of the schedule's last tick: the newest event of each in
 * the log (every state change is logged, so it is also the state of a message still pending).
 */
async function lastStates(
  ctx: ApiContext,
  schedule: Schedule,
): Promise<Record<string, EventState>> {
  const ids = schedule.lastMessageIds ?? [];
  const states: Record<string, EventState> = {};
  if (ids.length === 0) return states;
  const { items } = await ctx.executor.eventList({
    accountId: schedule.accountId,
    filter: { messageIds: ids },
    count: ids.length * EVENTS_PER_MESSAGE,
  });
  for (const event of items) states[event.messageId] ??= event.state; // newest first
  return states;
}
