/** The console's text formatting of bodies: readable JSON, and hostile nesting shown as sent. */
import { describe, expect, it } from 'vitest';
import { prettyText } from '../console/src/format.js';

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
