/**
 * The benchmark's message bodies (`--body BYTES`): what a body must begin with (its number, or
 * the send time the receiver measures latency from), padded with `x`. Without `bytes`, the begin
 * and 100 `x`s (about 110 bytes), as every run recorded before the option had.
 */
export function bodyMaker(bytes?: number): (begin: string) => string {
  const padding = 'x'.repeat(bytes ?? 100);
  if (bytes === undefined) return (begin) => `${begin} ${padding}`;
  return (begin) => `${begin} ${padding.slice(0, Math.max(0, bytes - begin.length - 1))}`;
}
