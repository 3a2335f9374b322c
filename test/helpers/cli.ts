/** Runs the built `ferry` command asynchronously (the test's own receivers keep answering). */
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { MAIN, startFerryProcess, type FerryProcess } from './process.js';
import { startReceiver, type Receiver, type Responder } from './receiver.js';

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
  const text = { stdout: '', stderr: '' };
  proc.stdout.on('data', (d: Buffer) => (text.stdout += d.toString()));
  proc.stderr.on('data', (d: Buffer) => (text.stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)));
  return {
    output: () => text.stdout,
    errors: () => text.stderr,
    /** Resolves once standard output (or `stream`) contains `wanted`; rejects after `timeoutMs`. */
    async waitFor(
      wanted: string,
      timeoutMs = 20_000,
      stream: 'stdout' | 'stderr' = 'stdout',
    ): Promise<void> {
      const deadline = Date.now() + timeoutMs;
      while (!text[stream].includes(wanted)) {
        if (Date.now() > deadline) {
          throw new Error(`no "${wanted}" on ${stream} in ${timeoutMs} ms:\n${text[stream]}`);
        }
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, deadline - Date.now() + 1);
          proc[stream].once('data', () => {
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

/** What `useCliServer` starts for a test file (set by its `beforeAll`). */
export interface CliServer {
  dataDir: string;
  ferry: FerryProcess;
  /** A destination for the messages the tests publish. */
  dest: Receiver;
  /** Connects the CLI through the data directory's credentials.json, as on the server's machine. */
  env: Record<string, string>;
}

/**
 * Starts, before the tests, the built Ferry on a data directory of its own (named after `name`)
 * and a receiver answering with `responder`; stops them and removes the directory after.
 */
export function useCliServer(name: string, responder?: Responder): CliServer {
  const server = {} as CliServer;
  beforeAll(async () => {
    server.dataDir = mkdtempSync(join(tmpdir(), `${name}-`));
    server.ferry = await startFerryProcess({ dataDir: server.dataDir });
    server.dest = await startReceiver(responder);
    server.env = { FERRY_DATA_DIR: server.dataDir };
  }, 60_000);
  afterAll(async () => {
    await server.ferry.kill('SIGTERM');
    await server.dest.close();
    rmSync(server.dataDir, { recursive: true, force: true });
  });
  return server;
}
