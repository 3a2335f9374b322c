/** The Schedule object of `interface.md` (plus `queueName`, `labels`), built from a stored schedule. */
import { redactHeaders, redactedText } from '../core/redaction.js';
import type { Schedule } from '../core/schedule.js';
import type { EventState } from '../core/types.js';
import { cutFields, textOrBase64, trimCutUtf8 } from './presenters.js';

/**
 * @param states the current state of each message the last tick produced (`lastScheduleStates`);
 *   messages whose state is no longer known (log pruned) are left out.
 */
export function scheduleJson(
  schedule: Schedule,
  states: Record<string, EventState>,
): Record<string, unknown> {
  const { spec } = schedule;
  const flow = spec.flowControl;
  return {
    scheduleId: schedule.id,
    cron: schedule.cron,
    destination: schedule.destination,
    createdAt: schedule.createdAt,
    method: spec.method,
    isPaused: schedule.paused,
    header: redactHeaders(spec.headers, spec.redact),
    ...(schedule.body.byteLength === 0
      ? {}
      : spec.redact?.body
        ? schedule.bodySize === undefined
          ? { body: redactedText(schedule.body) }
          : { body: 'REDACTED', ...cutFields('body', schedule.bodySize) }
        : schedule.bodySize === undefined
          ? textOrBase64(schedule.body, 'body', 'bodyBase64')
          : {
              ...textOrBase64(trimCutUtf8(schedule.body), 'body', 'bodyBase64'),
              ...cutFields('body', schedule.bodySize),
            }),
    retries: spec.retries,
    delay: spec.delayMs === undefined ? undefined : Math.round(spec.delayMs / 1000),
    callback: spec.callback?.url,
    failureCallback: spec.failureCallback?.url,
    callerIp: schedule.callerIp,
    queueName: schedule.queueName,
    flowControlKey: flow?.key,
    parallelism: flow?.parallelism,
    rate: flow?.rate,
    period: flow ? (flow.periodSec ?? 1) : undefined,
    retryDelayExpression: spec.retryDelayExpression,
    timeout: spec.timeoutMs === undefined ? undefined : Math.ceil(spec.timeoutMs / 1000),
    label: spec.labels?.[0],
    labels: spec.labels,
    lastScheduleTime: schedule.lastScheduleTime,
    nextScheduleTime: schedule.nextScheduleTime,
    lastScheduleStates: schedule.lastMessageIds === undefined ? undefined : states,
  };
}
