/** Plans files for tests: small account limits, or limits out of a test's way. */
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
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

/** Writes plan overrides to a temporary file and returns the `--plans-file` flags. */
export function planArgs(plans: object): string[] {
  const file = join(tmpdir(), `ferry-plans-${randomBytes(4).toString('hex')}.json`);
  writeFileSync(file, JSON.stringify(plans));
  return ['--plans-file', file];
}

/** The `--plans-file` flags of `LIMIT_PLANS`. */
export const limitPlanArgs = (): string[] => planArgs(LIMIT_PLANS);
