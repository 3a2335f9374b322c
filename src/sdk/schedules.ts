import { assertId } from './http.js';
import type { HttpClient } from './http.js';
import { publishHeaders } from './publish.js';
import type { CreateScheduleRequest, Schedule } from './types.js';

/** The headers of a schedule create: the publish headers plus cron, id and queue. Pure. */
export function scheduleHeaders(
  prefix: string,
  req: CreateScheduleRequest,
): Record<string, string> {
  const { cron, scheduleId, queueName, rawHeaders, ...publish } = req;
  const own: Record<string, string> = { [`${prefix}-Cron`]: cron };
  if (scheduleId !== undefined) own[`${prefix}-Schedule-Id`] = scheduleId;
  if (queueName !== undefined) own[`${prefix}-Queue-Name`] = queueName;
  // Passed as raw headers so that the caller's raw headers still win on a clash.
  return publishHeaders(prefix, { ...publish, rawHeaders: { ...own, ...rawHeaders } });
}

/** `/v2/schedules`: cron schedules that publish a message at every tick. */
export class SchedulesApi {
  constructor(
    private readonly http: HttpClient,
    private readonly prefix: string,
  ) {}

  /** Creates a schedule, or replaces the one with `scheduleId`. */
  async create(req: CreateScheduleRequest): Promise<{ scheduleId: string }> {
    if (req.destination === '') throw new TypeError('destination must not be empty');
    return this.http.request<{ scheduleId: string }>({
      method: 'POST',
      path: `/v2/schedules/${req.destination}`,
      headers: scheduleHeaders(this.prefix, req),
      body: req.body,
    });
  }

  async get(scheduleId: string): Promise<Schedule> {
    return this.http.request<Schedule>({
      method: 'GET',
      path: `/v2/schedules/${assertId('scheduleId', scheduleId)}`,
    });
  }

  /** Every schedule of the account, oldest first. */
  async list(): Promise<Schedule[]> {
    return this.http.request<Schedule[]>({ method: 'GET', path: '/v2/schedules' });
  }

  /** Deletes the schedule (messages it already produced stay); a 404 `FerryApiError` if none. */
  async delete(scheduleId: string): Promise<void> {
    await this.http.request<unknown>({
      method: 'DELETE',
      path: `/v2/schedules/${assertId('scheduleId', scheduleId)}`,
    });
  }

  /** Pauses: ticks are skipped until {@link resume}. */
  async pause(scheduleId: string): Promise<void> {
    await this.http.request<unknown>({
      method: 'POST',
      path: `/v2/schedules/${assertId('scheduleId', scheduleId)}/pause`,
    });
  }

  /** Resumes a paused schedule; its next tick is the first after now. */
  async resume(scheduleId: string): Promise<void> {
    await this.http.request<unknown>({
      method: 'POST',
      path: `/v2/schedules/${assertId('scheduleId', scheduleId)}/resume`,
    });
  }
}
