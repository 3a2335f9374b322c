/**
 * What one tick of a schedule produces: a publish with the schedule's stored settings, read at
 * the tick's time. This is the one place that turns a schedule into messages, so destinations
 * that fan out (URL groups) plug in here.
 */
import { buildMessage } from '../core/build-message.js';
import { notFound } from '../core/errors.js';
import type { PlanLimits } from '../core/plans.js';
import { parsePublishSettings, type PublishSettings } from '../core/publish-request.js';
import type { Schedule, ScheduleRequest } from '../core/schedule.js';
import type { Account, Message } from '../core/types.js';

/**
 * The publish settings of a schedule's stored request, as a publish of it at `tick` would read
 * them: `<P>-Delay` counts from the tick. Used at creation (to validate and describe) and at
 * every tick, so both read the headers the same way.
 * @throws FerryError as `parsePublishSettings` (a setting the plan no longer allows).
 */
export function scheduleSettings(p: {
  request: ScheduleRequest;
  prefix: string;
  plan: PlanLimits;
  tick: number;
}): PublishSettings {
  return parsePublishSettings({
    prefix: p.prefix,
    headers: p.request.headers,
    query: new URLSearchParams(p.request.query),
    plan: p.plan,
    now: p.tick,
  });
}

/** True when a stored destination is a URL (else it names a URL group). */
export const isUrlDestination = (destination: string): boolean => /^https?:\/\//i.test(destination);

/**
 * The messages of one tick: one per URL (one per endpoint of a URL group, once groups exist),
 * each carrying `scheduleId` and the schedule's queue. Deduplication settings do not apply:
 * every tick is a new message.
 * @param p.tick the tick's time (Unix ms); delays count from it.
 * @param p.now when the tick is fired (Unix ms): the messages' creation time.
 */
export function messagesForTick(p: {
  schedule: Schedule;
  account: Account;
  plan: PlanLimits;
  prefix: string;
  tick: number;
  now: number;
}): Message[] {
  const { schedule } = p;
  const settings = scheduleSettings({ ...p, request: schedule.request });
  if (!isUrlDestination(schedule.destination)) {
    // URL groups (issue 3): resolve the group's endpoints here and build one message each.
    throw notFound(`URL group "${schedule.destination}" not found`);
  }
  const message = buildMessage({
    account: p.account,
    url: schedule.destination,
    settings,
    body: schedule.body,
    callerIp: schedule.callerIp,
    now: p.now,
  });
  message.scheduleId = schedule.id;
  if (schedule.queueName !== undefined) message.queueName = schedule.queueName;
  return [message];
}
