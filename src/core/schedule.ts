/**
 * The schedule resource: a publish request stored with a cron expression and replayed at each
 * tick. Pure data and validation; the scheduler (`scheduler/`) fires schedules, the API
 * (`api/routes/schedules.ts`) creates and shows them.
 */
import { badRequest } from './errors.js';
import { quoteValue } from './headers.js';
import { refuseDotSegment } from './names.js';
import type { MessageSpec } from './types.js';

/**
 * The settings part of the create request, kept as sent so each tick re-reads it with
 * `parsePublishSettings`, exactly as a publish with those headers at the tick's time. Settings
 * that later versions add to publish (callbacks, redaction) then apply to schedules as well.
 */
export interface ScheduleRequest {
  /**
   * Request headers by lower-case name: `<P>-*` and `Content-Type`, plus every other header when
   * `<P>-Header-Forward` is on (as publish forwards them). Never `Authorization`.
   */
  headers: Record<string, string[]>;
  /** Ferry's own query parameters (`svc-retries=3`), in order; never the token parameters. */
  query: [string, string][];
}

/**
 * What the create request's settings meant when it was accepted, for `GET /v2/schedules`. The
 * produced messages do not read it: they re-parse `request` at each tick.
 */
export interface ScheduleSpec extends MessageSpec {
  retries: number;
  /** `<P>-Delay` in ms: each produced message is due this long after its tick. */
  delayMs?: number;
}

export interface Schedule {
  /** `scd_…`, or the caller's `<P>-Schedule-Id`; unique per account. */
  id: string;
  accountId: string;
  /** The cron expression as given, trimmed, with its `CRON_TZ=` prefix (see core/cron.ts). */
  cron: string;
  /** A destination URL or a URL-group name, as `parseDestination` returned it. */
  destination: string;
  createdAt: number;
  paused: boolean;
  request: ScheduleRequest;
  spec: ScheduleSpec;
  body: Uint8Array;
  /** Set when a list cut `body` (see `bodyCut`): the whole body's length, bytes. */
  bodySize?: number;
  /** IP address the schedule was created from; every produced message carries it. */
  callerIp: string;
  /** `<P>-Queue-Name`: each produced message is enqueued there. */
  queueName?: string;
  /** The next tick (Unix ms). Absent when the expression has no further tick. */
  nextScheduleTime?: number;
  /** The last tick that fired (Unix ms). */
  lastScheduleTime?: number;
  /** The messages the last tick produced (one per endpoint for a URL group). */
  lastMessageIds?: string[];
}

/** Schedule ids and queue names: letters, digits, `-`, `_`, `.` (API.md "Ids"). */
const NAME = /^[A-Za-z0-9_.-]+$/;
const MAX_NAME_LENGTH = 256;

/**
 * Checks a schedule id or queue name that a schedule creation sets (`.` and `..` refused: see
 * core/names.ts).
 * @throws FerryError 400 naming `field`.
 */
export function parseName(text: string, field: string): string {
  const trimmed = text.trim();
  if (trimmed === '') throw badRequest(`invalid ${field}: must not be empty`);
  if (trimmed.length > MAX_NAME_LENGTH) {
    throw badRequest(
      `invalid ${field} ${quoteValue(trimmed, 32)}: longer than ${MAX_NAME_LENGTH} characters`,
    );
  }
  if (!NAME.test(trimmed)) {
    throw badRequest(
      `invalid ${field} ${quoteValue(trimmed)}: only letters, digits, "-", "_" and "." are allowed`,
    );
  }
  return refuseDotSegment(trimmed, field);
}
