/** Plans with small limits for the account-limit tests, as a `--plans-file`. */
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

/** Writes `LIMIT_PLANS` to a temporary file and returns the `--plans-file` flags. */
export function limitPlanArgs(): string[] {
  const file = join(tmpdir(), `ferry-plans-${randomBytes(4).toString('hex')}.json`);
  writeFileSync(file, JSON.stringify(LIMIT_PLANS));
  return ['--plans-file', file];
}
