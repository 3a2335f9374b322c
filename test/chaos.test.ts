/**
 * The reduced crash suite of `npm run chaos` (docs/reliability.md): the built `ferry start` under
 * a steady publish load to a fast, a slow and a failing destination is SIGKILLed at random
 * moments, 3 times, and restarted on the same data; on PostgreSQL two nodes share a schema and
 * either is killed. What the destinations recorded must show: no acknowledged message lost,
 * every duplicate in flight at a kill, redelivery within lease + 5 s, a cron schedule neither
 * skipped nor doubled, and every workflow run (official `@upstash/workflow` SDK) started during
 * the kills completed with the right result, each step's result in its history and repeated
 * only after a kill. The full run (20 rounds, ~1,000 publishes/s) is `npm run chaos`.
 */
import { describe, expect, it } from 'vitest';
import { formatCrash, runCrash, type CrashOptions } from '../src/chaos/crash.js';
import { assertBuilt } from './helpers/process.js';
import { pgUrl } from './helpers/ferry.js';

const base: Omit<CrashOptions, 'storage'> = {
  rounds: 3,
  rate: 150,
  roundMs: [500, 2_000],
  leaseMs: 5_000,
  schedules: 1,
  workflows: 2,
  drainTimeoutMs: 60_000,
};

describe('crashes under load', () => {
  it.each(pgUrl ? (['sqlite', 'postgres'] as const) : (['sqlite'] as const))(
    '%s: nothing acknowledged is lost across 3 SIGKILLs; duplicates only of deliveries in flight',
    { timeout: 240_000 },
    async (storage) => {
      assertBuilt();
      const report = await runCrash({ ...base, storage, databaseUrl: pgUrl });
      console.log(formatCrash(report).join('\n'));
      expect(report.kills).toBe(3);
      expect(report.acknowledged).toBeGreaterThan(50);
      expect(report.lostIds).toEqual([]);
      expect(report.delivered).toBe(report.acknowledged);
      expect(report.duplicatesNotInFlight, report.examples.join('\n')).toBe(0);
      expect(report.redeliveryWithinBound).toBe(true);
      expect(report.schedules.ok).toBe(true);
      expect(report.workflows.started).toBeGreaterThan(0);
      expect(report.workflows.notCompleted).toEqual([]);
      expect(report.workflows.stepsNotOnce).toEqual([]);
    },
  );
});
