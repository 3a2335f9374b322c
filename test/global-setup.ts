/**
 * Runs once in vitest's main process, around the whole run. Temporary files that outlive a test
 * file go under one folder made here (`FERRY_TEST_TMP`, inherited by the worker processes, which
 * start after this) and removed at the end: a worker runs many files in one process (the
 * `together` project), so a helper module's own `afterAll` would run for the first file only.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

let root: string | undefined;

export function setup(): void {
  root = mkdtempSync(join(tmpdir(), 'ferry-test-run-'));
  process.env.FERRY_TEST_TMP = root;
}

export function teardown(): void {
  if (root !== undefined) rmSync(root, { recursive: true, force: true });
}
