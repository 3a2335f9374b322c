/** Runs the built `ferry` command asynchronously (the test's own receivers keep answering). */
import { execFile, spawn } from 'node:child_process';
import { MAIN } from './process.js';

export interface CliResult {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** `ferry …args` with `env` added to the environment; resolves whatever the exit status. */
export function runCli(args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [MAIN, ...args],
      { env: { ...process.env, ...env }, timeout: 60_000 },
      (error, stdout, stderr) => {
        const status = error ? (typeof error.code === 'number' ? error.code : null) : 0;
        resolve({ status, stdout, stderr });
      },
    );
  });
}

/** `ferry …args --json` that must succeed; its parsed output. */
export async function cliJson<T>(args: string[], env: Record<string, string> = {}): Promise<T> {
  const res = await runCli([...args, '--json'], env);
  if (res.status !== 0)
    throw new Error(`ferry ${args.join(' ')} exited ${res.status}: ${res.stderr}`);
  return JSON.parse(res.stdout) as T;
}

/** A long-running `ferry …` (e.g. `logs --follow`): its output so far and a way to stop it. */
export function spawnCli(args: string[]) {
  const proc = spawn(process.execPath, [MAIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  proc.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)));
  return {
    output: () => out,
    /** Resolves once the output contains `text`; rejects after `timeoutMs`. */
    async waitFor(text: string, timeoutMs = 20_000): Promise<void> {
      const deadline = Date.now() + timeoutMs;
      while (!out.includes(text)) {
        if (Date.now() > deadline) throw new Error(`no "${text}" in ${timeoutMs} ms:\n${out}`);
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, deadline - Date.now() + 1);
          proc.stdout.once('data', () => {
            clearTimeout(timer);
            resolve();
          });
        });
      }
    },
    stop(signal: NodeJS.Signals = 'SIGINT'): Promise<number | null> {
      proc.kill(signal);
      return exited;
    },
  };
}

/** Calls `check` until it returns a value (not undefined) or `timeoutMs` passes. */
export async function eventually<T>(
  check: () => Promise<T | undefined>,
  timeoutMs = 20_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`not there after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
