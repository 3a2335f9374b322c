/**
 * How far V8 lets the old generation grow past what its last major collection kept before it
 * marks and compacts again. V8 picks a factor between 1.1 and 4 from its own measure of the
 * collector's speed; for Ferry on PostgreSQL at 500 msg/s it came out between 1.6 and 2.9, a
 * major collection every 2–5 s, and each one (some 30 ms of marking that shares the two CPUs with
 * everything else) delayed the 10–25 deliveries in flight by 10–40 ms: the p99. With the factor
 * at 4 there were a third as many (2 instead of 6 and 9 over 10,000 messages), the p99 at 500
 * msg/s fell from 17.8, 13.7 and 16.7 ms to 9.7, 6.8 and 7.9 ms in three alternating pairs, SQLite's
 * and the full-rate throughput did not change, and the process's peak RSS rose by about 30 MB
 * (docs/benchmarks.md). A flag given on the command line or in NODE_OPTIONS wins.
 */
import v8 from 'node:v8';

/**
 * Node flags `npm start` (package.json) and the systemd unit of docs/operations.md pass, and the
 * benchmark's Ferry runs with: V8's young generation at 64 MB per semi-space instead of 16.
 * Objects that live a few milliseconds to a few hundred (requests in flight, deliveries,
 * statements in the driver's pipeline) are copied by fewer scavenges before they die. Measured in
 * alternating pairs after 20,000 warm-up messages (end to end, 2026-11-28): Ferry's CPU per
 * message lower in 19 of 26 pairs on PostgreSQL and 11 of 14 on SQLite, by 8–10 % (medians of the
 * pairs' ratios), V8's helper threads lower in 13 of the 14 pairs where threads were recorded;
 * fresh processes showed no difference; the p99 at 500 msg/s was lower in every one of 5 earlier
 * pairs (2026-11-27). The cost is memory: a peak RSS of 372 against 283 MB (SQLite) and 410
 * against 293 MB (PostgreSQL) over a warm end-to-end run (docs/benchmarks.md). V8 sizes the young
 * generation when the process starts (`v8.setFlagsFromString` leaves it as it was), so unlike the
 * growth factor below it must be on node's command line or in NODE_OPTIONS: `ferry` run by
 * itself goes without it.
 */
export const START_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=64'];

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
