/** What the client commands print: aligned tables for people, JSON (`--json`) for scripts. */

/**
 * Message data (URLs, labels, headers, bodies) is untrusted: control characters, escape
 * sequences among them, are shown as `\xNN` so that they cannot drive the terminal.
 */
export function sanitize(text: string): string {
  return text.replace(
    // eslint-disable-next-line no-control-regex
    /[\u0000-\u001f\u007f-\u009f]/g,
    (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`,
  );
}

/** A cell: absent values print as `-`, times (ms) as ISO 8601. */
export function cell(value: unknown): string {
  if (value === undefined || value === null || value === '') return '-';
  if (Array.isArray(value)) return value.length === 0 ? '-' : value.map(cell).join(',');
  // Numbers and booleans print the same as JSON; objects (header maps) as JSON.
  return sanitize(typeof value === 'string' ? value : JSON.stringify(value));
}

/** Unix ms as an ISO 8601 time (UTC); `-` for none. */
export const time = (ms: number | undefined): string =>
  ms === undefined || ms === 0 ? '-' : new Date(ms).toISOString();

/**
 * Rows under a header, each column as wide as its widest cell, two spaces apart. Written here
 * rather than with a table library: it is a dozen lines of `padEnd`, and the libraries draw
 * borders that `cut`/`awk` users do not want.
 */
export function table(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]): string =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return [line(headers), ...rows.map(line)].join('\n');
}

/** `key: value` lines for one object, keys aligned. */
export function record(fields: readonly (readonly [string, unknown])[]): string {
  const width = Math.max(...fields.map(([k]) => k.length));
  return fields.map(([k, v]) => `${`${k}:`.padEnd(width + 2)}${cell(v)}`).join('\n');
}

/**
 * What a bulk action by ids did: `deleted 2`, or `deleted 1; 1 of the ids given not in the DLQ`
 * when fewer than the distinct ids given were acted on.
 */
export function counted(verb: string, done: number, given: readonly string[], why: string): string {
  const missing = new Set(given).size - done;
  return missing > 0 ? `${verb} ${done}; ${missing} of the ids given ${why}` : `${verb} ${done}`;
}

/** Prints `value` as JSON with `--json`, else the human form. */
export function print(json: boolean | undefined, value: unknown, human: () => string): void {
  const text = json ? JSON.stringify(value ?? null, null, 2) : human();
  if (text !== '') process.stdout.write(`${text}\n`);
}
