import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // Most files wait on child processes, sockets and fsync, not CPU: two at once on the 2-core
    // CI machine (vitest's default is one fewer than the cores, so one).
    maxWorkers: 2,
  },
});
