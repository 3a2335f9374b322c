// Builds the web console (console/ → dist/console/) with Vite, unless its output is already
// built from the same sources: `npm start` runs `npm run build` every time, and a Vite build
// costs seconds that an unchanged console does not need. The sources' content hash is kept
// beside the output; any change to console/, the SDK types it uses or the lockfile rebuilds.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const out = join(root, 'dist/console');
const stamp = join(out, '.source-hash');

function files(dir) {
  return readdirSync(dir)
    .sort()
    .flatMap((name) => {
      const path = join(dir, name);
      return statSync(path).isDirectory() ? files(path) : [path];
    });
}

const hash = createHash('sha256');
for (const path of [
  ...files(join(root, 'console')),
  ...files(join(root, 'src/sdk')).filter((p) => p.endsWith('types.ts')),
  join(root, 'package-lock.json'),
]) {
  hash.update(path.slice(root.length)).update('\0').update(readFileSync(path)).update('\0');
}
const digest = hash.digest('hex');

if (
  existsSync(join(out, 'index.html')) &&
  existsSync(stamp) &&
  readFileSync(stamp, 'utf8') === digest
) {
  process.exit(0);
}
const { build } = await import('vite');
await build({ configFile: join(root, 'console/vite.config.ts') });
writeFileSync(stamp, digest);
