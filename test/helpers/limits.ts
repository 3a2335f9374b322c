/** Plans files for tests: small account limits, or limits out of a test's way. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';

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

/** The folder of this test file's plans files, made at the first use. */
let plansDir: string | undefined;
let written = 0;

// Registered when a test file imports this module, so it runs after the file's last test (Ferry
// reads its plans file when it starts).
afterAll(() => {
  if (plansDir !== undefined) rmSync(plansDir, { recursive: true, force: true });
  plansDir = undefined;
});

/** Writes plan overrides to a temporary file and returns the `--plans-file` flags. */
export function planArgs(plans: object): string[] {
  plansDir ??= mkdtempSync(join(tmpdir(), 'ferry-plans-'));
  written += 1;
  const file = join(plansDir, `plans-${written}.json`);
  writeFileSync(file, JSON.stringify(plans));
  return ['--plans-file', file];
}

/** The `--plans-file` flags of `LIMIT_PLANS`. */
export const limitPlanArgs = (): string[] => planArgs(LIMIT_PLANS);
