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
import type { Account, HeaderMap, Message, UrlGroup, UrlGroupEndpoint } from '../core/types.js';

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
  /** The URL group's default headers, for a group destination. */
  defaults?: HeaderMap;
  /**
   * Read at a tick, not at creation: the headers were accepted when the schedule was made, by
   * rules that may have been looser then (durations with units in any order).
   */
  stored?: boolean;
}): PublishSettings {
  return parsePublishSettings({
    prefix: p.prefix,
    headers: p.request.headers,
    query: new URLSearchParams(p.request.query),
    defaults: p.defaults,
    plan: p.plan,
    now: p.tick,
    stored: p.stored,
  });
}

/** True when a stored destination is a URL (else it names a URL group). */
export const isUrlDestination = (destination: string): boolean => /^https?:\/\//i.test(destination);

/**
 * The messages of one tick: one for a URL, one per endpoint of a URL group (with the group's
 * default headers, as they are at the tick), each carrying `scheduleId` and the schedule's
 * queue. Deduplication settings do not apply: every tick is a new message.
 * @param p.group the URL group a group destination names, read at the tick; undefined when it
 *   no longer exists (the tick then produces nothing: 404).
 * @param p.tick the tick's time (Unix ms); delays count from it.
 * @param p.now when the tick is fired (Unix ms): the messages' creation time.
 */
export function messagesForTick(p: {
  schedule: Schedule;
  account: Account;
  plan: PlanLimits;
  prefix: string;
  group?: UrlGroup;
  tick: number;
  now: number;
}): Message[] {
  const { schedule, group } = p;
  const isUrl = isUrlDestination(schedule.destination);
  if (!isUrl && !group) throw notFound(`URL group "${schedule.destination}" not found`);
  const settings = scheduleSettings({
    ...p,
    request: schedule.request,
    defaults: isUrl ? undefined : group?.headers,
    stored: true,
  });
  const targets: UrlGroupEndpoint[] =
    isUrl || !group ? [{ url: schedule.destination }] : group.endpoints;
  return targets.map((target) => {
    const message = buildMessage({
      account: p.account,
      url: target.url,
      settings,
      body: schedule.body,
      callerIp: schedule.callerIp,
      now: p.now,
    });
    if (!isUrl) {
      message.topicName = schedule.destination;
      if (target.name !== undefined) message.endpointName = target.name;
    }
    message.scheduleId = schedule.id;
    if (schedule.queueName !== undefined) message.queueName = schedule.queueName;
    return message;
  });
}
