/**
 * Command-line options of the development scripts (`npm run bench`, `npm run chaos`), parsed by
 * node:util's parseArgs: `--help` prints the script's usage; an unknown option, a missing value
 * or a number that is not one ends the script with a one-line error and status 2, before any work
 * starts (a typo must not start a ten-minute run with the defaults).
 */
import { parseArgs } from 'node:util';

type Options = Record<string, { type: 'string' | 'boolean'; default?: string | boolean }>;
type Values<O extends Options> = {
  [K in keyof O]: O[K]['type'] extends 'boolean' ? boolean | undefined : string | undefined;
};

/** Ends the script: the problem in one line, then the usage; status 2. */
export function usageError(message: string, usage: string): never {
  console.error(`${message}\n\n${usage}`);
  process.exit(2);
}

export function scriptArgs<O extends Options>(options: O, usage: string): Values<O> {
  let values: Record<string, unknown>;
  try {
    ({ values } = parseArgs({ options: { ...options, help: { type: 'boolean' } }, strict: true }));
  } catch (error) {
    usageError((error as Error).message, usage);
  }
  if (values.help === true) {
    console.log(usage);
    process.exit(0);
  }
  return values as Values<O>;
}

/** The option's value as a whole number of at least `min`, or `fallback` when it is absent. */
export function wholeNumber(
  value: string | undefined,
  name: string,
  fallback: number,
  usage: string,
  min = 0,
): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < min) {
    usageError(`--${name}: expected a whole number of at least ${min}, got "${value}"`, usage);
  }
  return n;
}

/** The option's value when it is one of `allowed` (or absent); else a usage error. */
export function oneOf<T extends string>(
  value: string | undefined,
  name: string,
  allowed: readonly T[],
  usage: string,
): T | undefined {
  if (value === undefined || (allowed as readonly string[]).includes(value)) {
    return value as T | undefined;
  }
  usageError(`--${name}: expected one of ${allowed.join(', ')}, got "${value}"`, usage);
}
