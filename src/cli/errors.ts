/** How the `ferry` command reports its errors: one line on stderr and an exit status. */
import { CommanderError } from 'commander';
import { FerryApiError } from '../sdk/errors.js';

/** A mistake in how `ferry` was called (flag, value, argument): exit status 2. */
export class UsageError extends Error {}

/**
 * Commander's message for a parse error, in Ferry's words: without the `error: ` prefix and the
 * quotes, and with "needs a value" for a flag given without one.
 */
export function commanderMessage(error: CommanderError): string {
  return error.message
    .replace(/^error: /, '')
    .replace(/^option '(--[\w-]+)[^']*' argument missing$/, '$1 needs a value')
    .replace(/unknown option '([^']+)'/, 'unknown option $1')
    .replace(/\n+/g, ' ')
    .trim();
}

/** What a failed `fetch` wraps: why it found no server (ECONNREFUSED …); else undefined. */
export function connectionFailure(error: unknown): NodeJS.ErrnoException | undefined {
  return error instanceof TypeError && error.cause instanceof Error ? error.cause : undefined;
}

/**
 * The one line printed for `error` and the exit status: 2 for a usage mistake, 1 for anything
 * else (an API error, an unreachable server, a file that cannot be written).
 */
export function describeFailure(error: unknown): { message: string; status: number } {
  if (error instanceof CommanderError) {
    // Help (asked for, or shown for a bare `ferry`) is already printed.
    if (/^commander\.(help|helpDisplayed|version)$/.test(error.code)) {
      return { message: '', status: error.exitCode };
    }
    return { message: commanderMessage(error), status: error.exitCode === 0 ? 0 : 2 };
  }
  if (error instanceof UsageError) return { message: error.message, status: 2 };
  if (error instanceof FerryApiError) {
    return { message: `${error.message} (HTTP ${error.status})`, status: 1 };
  }
  const cause = connectionFailure(error);
  if (cause !== undefined) {
    return { message: `${(error as Error).message}: ${cause.message}`, status: 1 };
  }
  return { message: error instanceof Error ? error.message : String(error), status: 1 };
}
