// The console's browser tests drive Debian's `chromium` package (no browser download: only the
// npm registry and Debian's packages are reachable). `npm test` runs this first: when
// /usr/bin/chromium is missing it installs the package with apt-get (as root, as CI runs), or
// says how to when it cannot. FERRY_CHROMIUM names another browser binary instead.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

const path = process.env.FERRY_CHROMIUM ?? '/usr/bin/chromium';
if (existsSync(path)) process.exit(0);

if (process.getuid?.() !== 0 || !existsSync('/usr/bin/apt-get')) {
  process.stderr.write(
    `The console's browser tests need Chromium at ${path}: run \`apt-get install -y chromium\` ` +
      'as root (or set FERRY_CHROMIUM); they fail without it.\n',
  );
  process.exit(0);
}
process.stdout.write('Installing chromium for the console browser tests (apt-get)…\n');
const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
const started = Date.now();
for (const args of [
  ['update', '-qq'],
  ['install', '-y', '-qq', 'chromium'],
]) {
  // dpkg prints a few hundred lines even with -qq: they are shown only when something fails.
  const run = spawnSync('apt-get', args, { env, encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
  if (run.status !== 0) {
    process.stderr.write(`${run.stdout ?? ''}${run.stderr ?? ''}`);
    process.stderr.write(`apt-get ${args.join(' ')} failed (status ${run.status})\n`);
    process.exit(1);
  }
}
process.stdout.write(`Installed chromium in ${Math.round((Date.now() - started) / 1000)} s.\n`);
