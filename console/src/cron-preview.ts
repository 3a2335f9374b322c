/**
 * The next fire times of a cron expression, computed in the browser with croner (the library
 * the server schedules with, same 5-part mode) so the form can show them as the user types.
 */
import { Cron } from 'croner';

export type CronPreview = { ok: true; times: Date[] } | { ok: false; error: string };

export function previewCron(expression: string, timeZone: string, count = 5): CronPreview {
  const fields = expression.trim().split(/\s+/).filter(Boolean);
  if (fields.length !== 5) {
    return {
      ok: false,
      error: `A cron expression has five fields (minute hour day-of-month month day-of-week); this one has ${fields.length}.`,
    };
  }
  try {
    const cron = new Cron(fields.join(' '), { timezone: timeZone, mode: '5-part', paused: true });
    const times = cron.nextRuns(count);
    if (times.length === 0) return { ok: false, error: 'This expression never fires.' };
    return { ok: true, times };
  } catch (error) {
    return { ok: false, error: (error as Error).message.replace(/^CronPattern: /, '') };
  }
}

/** `Wed 2026-11-25 14:00` in `timeZone`. */
export function formatInZone(date: Date, timeZone: string): string {
  const parts = new Intl.DateTimeFormat('en-GB', {
    timeZone,
    weekday: 'short',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    hourCycle: 'h23',
  }).formatToParts(date);
  const get = (type: string): string => parts.find((p) => p.type === type)?.value ?? '';
  return `${get('weekday')} ${get('year')}-${get('month')}-${get('day')} ${get('hour')}:${get('minute')}`;
}

/** Every IANA zone the browser knows, UTC first. */
export function timeZones(): string[] {
  const zones = Intl.supportedValuesOf('timeZone').filter((z) => z !== 'UTC');
  return ['UTC', ...zones];
}
