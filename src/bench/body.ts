/**
 * The benchmark's message bodies (`--body BYTES`): what a body must begin with (its number, or
 * the send time the receiver measures latency from), then padding to BYTES. Without `bytes`, the
 * begin and 100 `x`s (about 110 bytes), as every run recorded before the option had.
 *
 * With `bytes`, the padding is JSON-like text (keys, words, numbers and ids drawn from a fixed
 * seed), not one repeated letter: PostgreSQL compresses large values (TOAST) and Redis's peers
 * store them as they come, and a run of `x`s compresses to almost nothing, far faster than a
 * real payload does. The text is the same in every run.
 */
export function bodyMaker(bytes?: number): (begin: string) => string {
  if (bytes === undefined) {
    const padding = 'x'.repeat(100);
    return (begin) => `${begin} ${padding}`;
  }
  const padding = jsonLikeText(bytes);
  return (begin) => `${begin} ${padding.slice(0, Math.max(0, bytes - begin.length - 1))}`;
}

const WORDS = [
  'order',
  'customer',
  'item',
  'price',
  'quantity',
  'shipping',
  'address',
  'city',
  'country',
  'status',
  'paid',
  'pending',
  'created',
  'updated',
  'description',
  'email',
  'currency',
  'total',
];

/** `length` characters of ASCII JSON-like text from a fixed seed (a linear congruential draw). */
function jsonLikeText(length: number): string {
  let seed = 0x2545f491;
  const next = (n: number): number => {
    seed = (Math.imul(seed, 1_103_515_245) + 12_345) >>> 0;
    return (seed >>> 8) % n;
  };
  const parts: string[] = [];
  let size = 0;
  while (size < length) {
    const id = Array.from({ length: 12 }, () => '0123456789abcdef'[next(16)]).join('');
    const part =
      `{"${WORDS[next(WORDS.length)]}":"${WORDS[next(WORDS.length)]} ${WORDS[next(WORDS.length)]}",` +
      `"id":"${id}","n":${next(100_000)},"v":${next(1_000)}.${next(100)}},`;
    parts.push(part);
    size += part.length;
  }
  return parts.join('').slice(0, length);
}
