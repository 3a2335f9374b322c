import { existsSync, mkdirSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

/**
 * Creates the data directory (credentials.json and secret.key with either driver, the SQLite
 * database) readable by its owner only. An existing directory keeps its mode.
 */
export function makeDataDir(dir: string): void {
  try {
    makeDirs(dir, 0o700);
  } catch (error) {
    // "ENOTDIR: not a directory, mkdir '…'" → "not a directory (ENOTDIR)"
    const { code, message } = error as NodeJS.ErrnoException;
    const why = message.replace(/^[A-Z]+: /, '').replace(/, mkdir .*$/, '');
    throw new Error(
      `cannot create the data directory ${dir} (--data-dir): ${why}${code ? ` (${code})` : ''}`,
    );
  }
}

/**
 * `mkdir -p`, by hand: Node's `mkdirSync(…, {recursive: true})` loops forever when a file system
 * answers ENOENT to a mkdir inside a directory that exists, as procfs does (`--data-dir /proc/x`
 * kept a CPU busy until killed). Creates each missing level once, outermost first.
 * @throws the mkdir's error (ENOTDIR, EACCES, ENOENT …), or ENOTDIR when `dir` is a file.
 */
function makeDirs(dir: string, mode: number): void {
  const missing: string[] = [];
  for (let at = resolve(dir); !existsSync(at); at = dirname(at)) {
    missing.unshift(at);
    if (dirname(at) === at) break;
  }
  if (missing.length === 0 && !statSync(dir).isDirectory()) {
    throw Object.assign(new Error(`ENOTDIR: not a directory, mkdir '${dir}'`), { code: 'ENOTDIR' });
  }
  for (const level of missing) {
    try {
      mkdirSync(level, { mode });
    } catch (error) {
      // Another process made it meanwhile.
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
  }
}
