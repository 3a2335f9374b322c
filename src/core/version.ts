/**
 * Ferry's version, from the package.json two folders up: `src/core/` in tests, `dist/core/` once
 * built. Read once at load; `ferry --version`, the start banner and `ferry_build_info` show it.
 */
import { readFileSync } from 'node:fs';

function readVersion(): string {
  const text = readFileSync(new URL('../../package.json', import.meta.url), 'utf8');
  const { version } = JSON.parse(text) as { version?: unknown };
  return typeof version === 'string' ? version : 'unknown';
}

export const VERSION = readVersion();
