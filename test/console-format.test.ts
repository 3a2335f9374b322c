/** The console's text formatting of bodies: readable JSON, and hostile nesting shown as sent. */
import { describe, expect, it } from 'vitest';
import { prettyText, timeTicks } from '../console/src/format.js';

describe('prettyText', () => {
  it('indents JSON bodies and leaves other text as it is', () => {
    expect(prettyText('{"a":[1,{"b":"}"}]}')).toBe(
      '{\n  "a": [\n    1,\n    {\n      "b": "}"\n    }\n  ]\n}',
    );
    expect(prettyText('plain {text}')).toBe('plain {text}');
    expect(prettyText('{not json')).toBe('{not json');
  });

  it('shows a body nested thousands deep as sent, at once', () => {
    const deep = `${'{"k":'.repeat(5_000)}1${'}'.repeat(5_000)}`;
    // Indented, it would be about 50 MB of text and take seconds to build and show.
    expect(prettyText(deep)).toBe(deep);
    // Strings do not count as nesting.
    const quoted = JSON.stringify({ s: '{'.repeat(500) });
    expect(prettyText(quoted)).toContain('\n  "s": ');
  });
});

describe('timeTicks', () => {
  // Local times, as the browser shows them: built from the parts, whatever the test's zone.
  const at = (y: number, mo: number, d: number, h: number, mi: number) =>
    new Date(y, mo - 1, d, h, mi).getTime() / 1000;

  it('writes times within a day as HH:MM, the date under the first tick and at each new day', () => {
    const ticks = [at(2026, 12, 7, 23, 50), at(2026, 12, 7, 23, 55), at(2026, 12, 8, 0, 0)];
    expect(timeTicks(ticks, 300)).toEqual(['23:50\n2026-12-07', '23:55', '00:00\n2026-12-08']);
  });

  it('writes ticks a day or more apart as MM-DD, the year under the first and at a new year', () => {
    const ticks = [at(2026, 12, 30, 0, 0), at(2026, 12, 31, 0, 0), at(2027, 1, 1, 0, 0)];
    expect(timeTicks(ticks, 86_400)).toEqual(['12-30\n2026', '12-31', '01-01\n2027']);
  });
});
