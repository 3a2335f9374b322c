/**
 * Runs the built `ferry` command (`dist/cli/main.js`) as a child process, as a user would, and
 * waits for its start banner.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Credentials } from '../../src/cli/credentials.js';

export const MAIN = join(import.meta.dirname, '../../dist/cli/main.js');

export interface FerryProcess {
  proc: ChildProcess;
  credentials: Credentials;
  output: () => string;
  exited: Promise<number | null>;
  kill(signal: NodeJS.Signals): Promise<number | null>;
}

export function assertBuilt(): void {
  if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run "npm run build" (npm test does)`);
}

export async function startFerryProcess(p: {
  dataDir: string;
  args?: string[];
  env?: Record<string, string>;
}): Promise<FerryProcess> {
  assertBuilt();
  const proc = spawn(
    process.execPath,
    [
      MAIN,
      'start',
      '--port',
      '0',
      '--data-dir',
      p.dataDir,
      '--log-level',
      'warn',
      ...(p.args ?? []),
    ],
    { env: { ...process.env, ...p.env }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  proc.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)));
  await new Promise<void>((resolve, reject) => {
    const onData = (): void => {
      if (out.includes('Ferry is running at')) resolve();
    };
    proc.stdout?.on('data', onData);
    void exited.then((code) =>
      reject(new Error(`ferry exited with ${code} before starting:\n${out}`)),
    );
  });
  const credentials = JSON.parse(
    readFileSync(join(p.dataDir, 'credentials.json'), 'utf8'),
  ) as Credentials;
  return {
    proc,
    credentials,
    output: () => out,
    exited,
    kill(signal) {
      proc.kill(signal);
      return exited;
    },
  };
}
