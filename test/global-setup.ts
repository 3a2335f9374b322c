/**
 * Runs in vitest's main process, around the whole run. Temporary files that outlive a test file
 * go under one folder made here (`FERRY_TEST_TMP`, inherited by the worker processes, which start
 * after this) and removed at the end: a worker runs many files in one process (the `together`
 * project), so a helper module's own `afterAll` would run for the first file only.
 *
 * Vitest calls this once per project (`extends: true` inherits it), each call with a module of
 * its own: the first makes the folder and later ones find it in the environment, so one folder
 * serves the run and the call that made it removes it (teardowns run after every project).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

let made: string | undefined;

export function setup(): void {
  if (process.env.FERRY_TEST_TMP !== undefined) return;
  made = mkdtempSync(join(tmpdir(), 'ferry-test-run-'));
  process.env.FERRY_TEST_TMP = made;
}

export function teardown(): void {
  if (made !== undefined) rmSync(made, { recursive: true, force: true });
}
