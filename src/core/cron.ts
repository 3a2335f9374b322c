/**
 * `<P>-Cron` of a schedule: five cron fields (minute hour day-of-month month day-of-week), read
 * in UTC unless prefixed with `CRON_TZ=<IANA zone> `. Tick times come from croner (DESIGN.md),
 * which knows the zone's daylight-saving rules.
 *
 * Daylight saving, as croner computes it (croner's `fixedTimeRule` "single-value"):
 * - a fixed time (`30 2 * * *`: minute and hour are single values) that falls into the spring
 *   gap runs once at the first valid time after the gap (03:00), and a fixed time that occurs
 *   twice in autumn runs once, at its first occurrence;
 * - other expressions (`*\/15 * * * *`) are intervals of real time: local times in the gap do
 *   not exist and are skipped, a repeated local hour runs twice (two distinct instants).
 * So a tick that exists in local time is never skipped and never doubled.
 */
import { Cron } from 'croner';
import { badRequest } from './errors.js';
import { quoteValue } from './headers.js';

export interface CronSchedule {
  /** The expression as given, trimmed (with its `CRON_TZ=` prefix). */
  text: string;
  /** IANA zone of `CRON_TZ=`, or undefined for UTC. */
  timezone?: string;
  /** The first tick strictly after `afterMs` (Unix ms), or undefined when there is none. */
  next(afterMs: number): number | undefined;
  /** The latest tick at or before `atMs` (Unix ms), or undefined when there is none. */
  latest(atMs: number): number | undefined;
}

const CRON_TZ = /^CRON_TZ=(\S+)\s+(.*)$/s;

/**
 * Parses and checks a cron expression.
 * @param field the header name, for error messages (`Svc-Cron`).
 * @throws FerryError 400 naming `field` for a bad expression or time zone, or one that never fires.
 */
export function parseCron(text: string, field: string): CronSchedule {
  const trimmed = text.trim();
  const fail = (problem: string) =>
    badRequest(`invalid ${field} ${quoteValue(trimmed)}: ${problem}`);
  if (trimmed === '') throw fail('must not be empty');

  let expression = trimmed;
  let timezone: string | undefined;
  if (trimmed.startsWith('CRON_TZ=')) {
    const match = CRON_TZ.exec(trimmed);
    if (!match) throw fail('expected CRON_TZ=<IANA time zone> followed by five cron fields');
    timezone = match[1] ?? '';
    expression = (match[2] ?? '').trim();
    if (!isTimeZone(timezone)) {
      throw fail(
        `unknown time zone ${quoteValue(timezone)} (expected an IANA name such as Europe/Berlin)`,
      );
    }
  }
  const fields = expression.split(/\s+/);
  if (fields.length !== 5) {
    throw fail(
      `expected five fields (minute hour day-of-month month day-of-week), got ${fields.length}`,
    );
  }

  let cron: Cron;
  try {
    cron = new Cron(fields.join(' '), { timezone, mode: '5-part' });
  } catch (error) {
    throw fail((error as Error).message.replace(/^CronPattern: /, ''));
  }
  const schedule: CronSchedule = {
    text: trimmed,
    timezone,
    next: (afterMs) => cron.nextRun(new Date(afterMs))?.getTime(),
    // previousRuns is strictly before its reference; +1 ms makes `atMs` itself count.
    latest: (atMs) => cron.previousRuns(1, new Date(atMs + 1))[0]?.getTime(),
  };
  // `0 0 30 2 *` parses but never fires; refuse it rather than store a schedule that never runs.
  if (schedule.next(Date.UTC(2000, 0, 1)) === undefined) throw fail('it never fires');
  return schedule;
}

function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}
