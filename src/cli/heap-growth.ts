/**
 * How far V8 lets the old generation grow past what its last major collection kept before it
 * marks and compacts again. V8 picks a factor between 1.1 and 4 from its own measure of the
 * collector's speed; for Ferry on PostgreSQL at 500 msg/s it came out between 1.6 and 2.9, a
 * major collection every 2–5 s, and each one (some 30 ms of marking that shares the two CPUs with
 * everything else) delayed the 10–25 deliveries in flight by 10–40 ms: the p99. With the factor
 * at 4 there were a third as many (2 instead of 6 and 9 over 10,000 messages), the p99 at 500
 * msg/s fell from 17.8, 13.7 and 16.7 ms to 9.7, 6.8 and 7.9 ms in three alternating pairs, SQLite's
 * and the full-rate throughput did not change, and the process's peak RSS rose by about 30 MB
 * (docs/benchmarks-log.md). A flag given on the command line or in NODE_OPTIONS wins.
 */
import v8 from 'node:v8';

/** The V8 flag `ferry start` sets: the old generation may grow to 4 times what was kept. */
export const HEAP_GROWTH_FLAG = '--heap-growing-percent=300';

/** The flag to set, or undefined when the user gave one (V8 reads `-` and `_` alike). */
export function heapGrowthFlag(execArgv: readonly string[], nodeOptions = ''): string | undefined {
  const given = [...execArgv, ...nodeOptions.split(/\s+/)].some((flag) =>
    flag.replaceAll('_', '-').startsWith('--heap-growing-percent'),
  );
  return given ? undefined : HEAP_GROWTH_FLAG;
}

/** Sets the flag for this process (V8 reads it at every collection), unless the user gave one. */
export function tuneHeapGrowth(): void {
  const flag = heapGrowthFlag(process.execArgv, process.env.NODE_OPTIONS);
  if (flag) v8.setFlagsFromString(flag);
}
