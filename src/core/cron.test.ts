import { describe, expect, it } from 'vitest';
import { FerryError } from './errors.js';
import { parseCron } from './cron.js';

const iso = (ms: number | undefined): string | undefined =>
  ms === undefined ? undefined : new Date(ms).toISOString();

/** The first `n` ticks after `from`. */
function ticks(text: string, from: string, n: number): (string | undefined)[] {
  const cron = parseCron(text, 'Svc-Cron');
  const out: (string | undefined)[] = [];
  let at = Date.parse(from);
  for (let i = 0; i < n; i++) {
    const next = cron.next(at);
    out.push(iso(next));
    if (next === undefined) break;
    at = next;
  }
  return out;
}

describe('parseCron', () => {
  it.each([
    [
      '*/5 * * * *',
      '2026-01-01T00:00:00Z',
      ['2026-01-01T00:05:00.000Z', '2026-01-01T00:10:00.000Z'],
    ],
    ['0 9 * * 1', '2026-01-01T00:00:00Z', ['2026-01-05T09:00:00.000Z', '2026-01-12T09:00:00.000Z']],
    // Day-of-month OR day-of-week, as in Vixie cron.
    ['0 0 1 * 0', '2026-01-01T00:00:00Z', ['2026-01-04T00:00:00.000Z', '2026-01-11T00:00:00.000Z']],
    ['  0 12 * * *  ', '2026-01-01T12:00:00Z', ['2026-01-02T12:00:00.000Z']],
    ['CRON_TZ=America/New_York 0 9 * * *', '2026-01-01T00:00:00Z', ['2026-01-01T14:00:00.000Z']],
  ])('%j after %s', (text, from, expected) => {
    expect(ticks(text, from, expected.length)).toEqual(expected);
  });

  it('keeps the text trimmed and reads the zone', () => {
    const cron = parseCron('  CRON_TZ=Europe/Berlin   */10 * * * * ', 'Svc-Cron');
    expect(cron.text).toBe('CRON_TZ=Europe/Berlin   */10 * * * *');
    expect(cron.timezone).toBe('Europe/Berlin');
    expect(parseCron('* * * * *', 'Svc-Cron').timezone).toBeUndefined();
  });

  it('latest is the tick at or before a time', () => {
    const cron = parseCron('*/5 * * * *', 'Svc-Cron');
    expect(iso(cron.latest(Date.parse('2026-01-01T00:05:00Z')))).toBe('2026-01-01T00:05:00.000Z');
    expect(iso(cron.latest(Date.parse('2026-01-01T00:09:59.999Z')))).toBe(
      '2026-01-01T00:05:00.000Z',
    );
    expect(cron.next(Date.parse('2026-01-01T00:05:00Z'))).toBe(Date.parse('2026-01-01T00:10:00Z'));
  });

  it.each([
    ['', /must not be empty/],
    ['* * * *', /five fields .* got 4/],
    ['* * * * * *', /five fields .* got 6/],
    ['61 * * * *', /minute/],
    ['* * * * mon-xyz', /Svc-Cron/],
    ['CRON_TZ=Mars/Base * * * * *', /unknown time zone "Mars\/Base"/],
    ['CRON_TZ=Europe/Berlin', /expected CRON_TZ=<IANA time zone> followed by five cron fields/],
    ['0 0 30 2 *', /never fires/],
  ])('refuses %j with a 400 naming the header', (text, message) => {
    let error: unknown;
    try {
      parseCron(text, 'Svc-Cron');
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(FerryError);
    expect((error as FerryError).status).toBe(400);
    expect((error as FerryError).message).toMatch(/Svc-Cron/);
    expect((error as FerryError).message).toMatch(message);
  });
});

describe('daylight saving (Europe/Berlin, 2026: spring forward 29 March, fall back 25 October)', () => {
  it('a daily time that exists every day fires once a day across spring forward', () => {
    // 03:00 local: CET (UTC+1) before, CEST (UTC+2) after.
    expect(ticks('CRON_TZ=Europe/Berlin 0 3 * * *', '2026-03-27T12:00:00Z', 3)).toEqual([
      '2026-03-28T02:00:00.000Z',
      '2026-03-29T01:00:00.000Z',
      '2026-03-30T01:00:00.000Z',
    ]);
  });

  it('a fixed time inside the spring gap (02:30 does not exist) fires once, at 03:00', () => {
    expect(ticks('CRON_TZ=Europe/Berlin 30 2 * * *', '2026-03-27T12:00:00Z', 3)).toEqual([
      '2026-03-28T01:30:00.000Z',
      '2026-03-29T01:00:00.000Z',
      '2026-03-30T00:30:00.000Z',
    ]);
  });

  it('a fixed time that occurs twice at fall back (02:30) fires once', () => {
    expect(ticks('CRON_TZ=Europe/Berlin 30 2 * * *', '2026-10-24T12:00:00Z', 3)).toEqual([
      '2026-10-25T00:30:00.000Z',
      '2026-10-26T01:30:00.000Z',
      '2026-10-27T01:30:00.000Z',
    ]);
  });

  it('an hourly schedule fires every real hour across fall back (25 ticks that day)', () => {
    const day = ticks('CRON_TZ=Europe/Berlin 0 * * * *', '2026-10-24T21:59:00Z', 26);
    // Local midnight 25 Oct is 22:00 UTC on the 24th; the next local midnight 23:00 UTC on the 25th.
    expect(day[0]).toBe('2026-10-24T22:00:00.000Z');
    expect(day[25]).toBe('2026-10-25T23:00:00.000Z');
    expect(new Set(day).size).toBe(26);
  });
});
