import { defineConfig } from 'vitest/config';

/**
 * Files that measure real time (retry gaps, latency under load) or that load the machine on
 * purpose (crash rounds, the HTTP fuzzer, flood tests): they run one at a time, after the rest,
 * so neither disturbs the other's timing.
 */
const ALONE = [
  'test/retry-gaps.test.ts',
  'test/fairness.test.ts',
  'test/flow-control-load.test.ts',
  'test/chaos.test.ts',
  'test/http-fuzz.test.ts',
  'test/db-outage.test.ts',
  'test/shared-bodies.test.ts',
  'test/durability.test.ts',
  'test/list-bounds.test.ts',
  'test/batch-turns.test.ts',
];

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    globalSetup: ['test/global-setup.ts'],
    projects: [
      {
        extends: true,
        test: {
          name: 'together',
          include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
          exclude: ALONE,
          // Most files wait on child processes, sockets and fsync, not CPU: two at once on the
          // 2-core CI machine (vitest's default is one fewer than the cores, so one).
          maxWorkers: 2,
          // Each file in a fresh process imported Ferry's modules and its libraries again: 108 s
          // of a 239 s run. A worker process now runs file after file (169 s, the same tests).
          // Tests start their own servers, stores and receivers and close them, and Ferry keeps
          // no state between instances in a process, so files do not see each other's.
          isolate: false,
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          name: 'alone',
          include: ALONE,
          fileParallelism: false,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
