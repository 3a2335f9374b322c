/**
 * Where a worker thread's compiled entry point is, for the modules that start one (the delivery
 * thread, the SQLite checkpoint thread).
 *
 * From the build (`dist/`) the entry point sits in the same tree as the module that starts it.
 * Tests run the modules from `src/` through a TypeScript loader that worker threads do not have,
 * so they use the build's copy (`npm test` builds first).
 *
 * @param fromSrc the entry point's path below `src/` (and `dist/`), with its `.js` name, e.g.
 *   `engine/dispatch-worker.js`.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export function workerScript(fromSrc: string): URL {
  const beside = new URL(`./${fromSrc}`, import.meta.url);
  if (!import.meta.url.endsWith('.ts')) return beside;
  const built = new URL(`../dist/${fromSrc}`, import.meta.url);
  if (!existsSync(fileURLToPath(built))) {
    throw new Error(`${fileURLToPath(built)} is missing: run \`npm run build\` first`);
  }
  return built;
}
