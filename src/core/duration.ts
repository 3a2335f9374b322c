import { badRequest } from './errors.js';
import { quoteValue } from './headers.js';

/** Milliseconds per unit of the duration syntax of `Svc-Delay`, `Svc-Timeout` and flow control. */
const UNIT_MS: ReadonlyMap<string, number> = new Map([
  ['d', 86_400_000],
  ['h', 3_600_000],
  ['m', 60_000],
  ['s', 1_000],
]);

const EXPECTED =
  'expected <integer><unit> groups with units d, h, m, s (like "1d2h30m") or a whole number of seconds';

/**
 * Parses a duration header (`Svc-Delay`, `Svc-Timeout`, flow-control `period`) into
 * milliseconds. The syntax is one or more `<integer><unit>` groups, units `d h m s`
 * (`1d2h30m`, `10s`), or a bare non-negative integer meaning seconds (what the SDKs send for a
 * number). Units come largest first, each at most once, as docs/api.md shows them: `1d1d` or
 * `1s1m` is a typo more likely than a wish for 48 h, and was silently read as one. Surrounding
 * whitespace is ignored; whitespace between groups is not.
 *
 * @param field the header (or field) name, used in the error message.
 * @param options.anyOrder accept units in any order and repeated, adding the groups up as Go's
 *   `time.ParseDuration` does: what Ferry accepted before, for replaying settings stored then
 *   (a schedule's headers, read again at every tick).
 * @throws FerryError 400 naming `field` and the value when the text is empty, negative, has
 *   decimals, an unknown, repeated or out-of-order unit, or exceeds `Number.MAX_SAFE_INTEGER` ms.
 */
export function parseDuration(
  text: string,
  field: string,
  options: { anyOrder?: boolean } = {},
): number {
  const fail = (problem: string) => badRequest(`invalid ${field} ${quoteValue(text)}: ${problem}`);
  const s = text.trim();
  if (s === '') throw fail(`empty value; ${EXPECTED}`);
  if (s.startsWith('-')) throw fail('a duration cannot be negative');

  const bareSeconds = /^\d+$/.test(s);
  const group = /(\d+)([a-zA-Z]*)/y;
  let total = 0;
  let pos = 0;
  let lastUnitMs = Infinity;
  while (pos < s.length) {
    group.lastIndex = pos;
    const match = group.exec(s);
    if (!match) throw fail(problemAt(s[pos]));
    const [, digits = '', unit = ''] = match;
    let unitMs: number;
    if (unit === '') {
      if (!bareSeconds) throw fail(problemAt(s[group.lastIndex], digits));
      unitMs = 1_000;
    } else {
      const known = UNIT_MS.get(unit);
      if (known === undefined) throw fail(`unknown unit ${quoteValue(unit)} (use d, h, m or s)`);
      if (!options.anyOrder && known >= lastUnitMs) {
        throw fail(
          known === lastUnitMs
            ? `unit ${quoteValue(unit)} is repeated; ${EXPECTED}`
            : `unit ${quoteValue(unit)} comes after a smaller one; write units in the order d, h, m, s`,
        );
      }
      lastUnitMs = known;
      unitMs = known;
    }
    total += Number(digits) * unitMs;
    if (!Number.isSafeInteger(total)) throw fail('too large');
    pos = group.lastIndex;
  }
  return total;
}

/** Explains why parsing stopped at character `ch` (after a number `digits` without a unit). */
function problemAt(ch: string | undefined, digits?: string): string {
  if (ch === '.') return 'decimals are not allowed';
  if (ch !== undefined && /\s/.test(ch)) return 'spaces are not allowed';
  if (digits !== undefined) return `missing unit after ${digits}; ${EXPECTED}`;
  return `unexpected ${quoteValue(ch ?? '')}; ${EXPECTED}`;
}
