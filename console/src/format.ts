/** Display helpers. Everything here returns plain strings; rendering them is always as text. */

const pad = (n: number): string => String(n).padStart(2, '0');

/** `2026-11-25`: a date in the browser's time zone. */
const dayOf = (d: Date): string =>
  `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;

/** `2026-11-25 12:01:02` in the browser's time zone; empty for absent times. */
export function formatTime(ms: number | undefined): string {
  if (ms === undefined || !Number.isFinite(ms) || ms <= 0) return '';
  const d = new Date(ms);
  return `${dayOf(d)} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/**
 * Labels of a time axis's ticks (Unix seconds, `step` seconds apart), in the console's own forms
 * rather than the chart library's US ones. Ticks within a day: `14:05`, with the date
 * (`2026-11-25`) under the first tick and under each tick of a new day. Ticks a day or more
 * apart: `11-25`, with the year under the first tick and under each tick of a new year (the whole
 * date would not fit between ticks).
 */
export function timeTicks(seconds: number[], step: number): string[] {
  let previous = '';
  return seconds.map((s) => {
    const d = new Date(s * 1000);
    const [tick, under] =
      step >= 86_400
        ? [`${pad(d.getMonth() + 1)}-${pad(d.getDate())}`, String(d.getFullYear())]
        : [`${pad(d.getHours())}:${pad(d.getMinutes())}`, dayOf(d)];
    const label = under === previous ? tick : `${tick}\n${under}`;
    previous = under;
    return label;
  });
}

/** `850 ms`, `4.2 s`, `3 min`. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  if (ms < 3_600_000) return `${Math.round(ms / 60_000)} min`;
  return `${(ms / 3_600_000).toFixed(1)} h`;
}

/** A body as the console shows it: text when it is UTF-8, otherwise base64 and hex. */
export type DecodedBody =
  | { kind: 'empty' }
  | { kind: 'text'; text: string }
  | { kind: 'binary'; base64: string; hex: string; size: number };

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Decodes a base64 body (as events carry them) for display. */
export function decodeBase64Body(base64: string | undefined): DecodedBody {
  if (!base64) return { kind: 'empty' };
  // Redacted bodies arrive as the `REDACTED:<sha256>` text itself, not base64.
  if (base64.startsWith('REDACTED:')) return { kind: 'text', text: base64 };
  let bytes: Uint8Array;
  try {
    bytes = Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
  } catch {
    return { kind: 'text', text: base64 };
  }
  try {
    return { kind: 'text', text: utf8.decode(bytes) };
  } catch {
    return { kind: 'binary', base64, hex: toHex(bytes.subarray(0, 4096)), size: bytes.length };
  }
}

function toHex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0'))
    .join(' ')
    .replace(/((?:[0-9a-f]{2} ){16})/g, '$1\n');
}

/** Pretty-prints JSON text; other text comes back unchanged. */
export function prettyText(text: string): string {
  const trimmed = text.trim();
  if (!trimmed.startsWith('{') && !trimmed.startsWith('[')) return text;
  if (nestingDepth(trimmed) > MAX_PRETTY_DEPTH) return text;
  try {
    return JSON.stringify(JSON.parse(trimmed), null, 2);
  } catch {
    return text;
  }
}

/**
 * Nesting beyond which a JSON body is shown as it came. Pretty-printing indents each line by its
 * depth, so the text grows with the square of the nesting: a 30 KB body nested 5,000 deep became
 * 50 MB and froze the tab for 15 s. Bodies come from publishers and destinations, so anyone could
 * send one to whoever opens the message.
 */
const MAX_PRETTY_DEPTH = 100;

/** The deepest nesting of `{` and `[` in JSON text, outside strings (one pass, no parse). */
function nestingDepth(json: string): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < json.length; i++) {
    const c = json.charCodeAt(i);
    if (inString) {
      if (c === 92)
        i++; // a backslash escapes the next character
      else if (c === 34) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 123 || c === 91) deepest = Math.max(deepest, ++depth);
    else if (c === 125 || c === 93) depth--;
  }
  return deepest;
}

/** `datetime-local` input value ⇄ Unix ms. */
export function toLocalInput(ms: number | undefined): string {
  if (!ms) return '';
  const d = new Date(ms - new Date(ms).getTimezoneOffset() * 60_000);
  return d.toISOString().slice(0, 16);
}

export function fromLocalInput(value: string): number | undefined {
  if (!value) return undefined;
  const ms = new Date(value).getTime();
  return Number.isFinite(ms) ? ms : undefined;
}
