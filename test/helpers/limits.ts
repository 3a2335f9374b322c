/** Plans files for tests: small account limits, or limits out of a test's way. */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Small limits: `paid` has a low request rate, `free` low daily quotas and a tiny DLQ. */
export const LIMIT_PLANS = {
  paid: { max_requests_per_second: 3 },
  free: {
    max_requests_per_second: 1_000,
    max_requests_per_day: 4,
    max_requests_per_day_hard: 6,
    max_dlq_size: 2,
  },
};

/** The folder of this process's plans files, made at the first use, under the run's folder. */
let plansDir: string | undefined;
let written = 0;

/** Writes plan overrides to a temporary file and returns the `--plans-file` flags. */
export function planArgs(plans: object): string[] {
  // Removed with the run's folder (test/global-setup.ts) when every file has finished: Ferry
  // reads a plans file whenever it starts, so a file is kept until then.
  plansDir ??= mkdtempSync(join(process.env.FERRY_TEST_TMP ?? tmpdir(), 'ferry-plans-'));
  written += 1;
  const file = join(plansDir, `plans-${written}.json`);
  writeFileSync(file, JSON.stringify(plans));
  return ['--plans-file', file];
}

/** The `--plans-file` flags of `LIMIT_PLANS`. */
export const limitPlanArgs = (): string[] => planArgs(LIMIT_PLANS);
