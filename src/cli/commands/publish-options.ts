/** The publish flags, shared by `ferry publish` and `ferry schedules create`. */
import { readFileSync } from 'node:fs';
import { InvalidArgumentError, type Command } from 'commander';
import type { HttpMethod, PublishRequest } from '../../sdk/types.js';
import { UsageError } from '../errors.js';

/** Commander's parsed publish flags. */
export interface PublishFlags {
  body?: string;
  bodyFile?: string;
  contentType?: string;
  header: string[];
  method?: string;
  delay?: string;
  retries?: number;
  retryDelay?: string;
  timeout?: string;
  callback?: string;
  failureCallback?: string;
  label: string[];
  flowControlKey?: string;
  parallelism?: number;
  rate?: number;
  period?: string;
}

/** Parses a non-negative integer flag value; commander reports the error with the flag's name. */
export function integer(value: string): number {
  if (!/^\d+$/.test(value)) throw new InvalidArgumentError('must be a non-negative integer');
  return Number(value);
}

/** Collects a repeatable flag into an array. */
export const collect = (value: string, previous: string[]): string[] => [...previous, value];

export function withPublishOptions(command: Command): Command {
  return command
    .option('--body <text>', 'the message body')
    .option('--body-file <file>', 'read the body from a file (- = standard input)')
    .option('--content-type <type>', 'Content-Type of the body')
    .option('--header <name:value>', 'a header for the destination (repeatable)', collect, [])
    .option('--method <method>', 'HTTP method toward the destination (POST)')
    .option('--delay <duration>', 'wait before the first attempt (10s, 1h30m)')
    .option('--retries <n>', 'retries after a failed attempt', integer)
    .option('--retry-delay <expr>', 'retry delay expression in ms over `retried`')
    .option('--timeout <duration>', 'delivery timeout')
    .option('--callback <url>', 'called with the result of every attempt')
    .option('--failure-callback <url>', 'called once retries are exhausted')
    .option('--label <label>', 'a label (repeatable)', collect, [])
    .option('--flow-control-key <key>', 'flow-control key (with --parallelism and/or --rate)')
    .option('--parallelism <n>', 'deliveries in flight for the key', integer)
    .option('--rate <n>', 'deliveries started per period for the key', integer)
    .option('--period <duration>', 'the rate period (1s)');
}

/** `Name: value` → `['Name', 'value']`; the name must not be empty. */
function header(text: string): [string, string] {
  const colon = text.indexOf(':');
  const name = colon === -1 ? '' : text.slice(0, colon).trim();
  if (name === '') throw new UsageError(`--header must be name:value, got "${text}"`);
  return [name, text.slice(colon + 1).trim()];
}

function body(flags: PublishFlags): string | Uint8Array | undefined {
  if (flags.body !== undefined && flags.bodyFile !== undefined) {
    throw new UsageError('give --body or --body-file, not both');
  }
  if (flags.bodyFile === undefined) return flags.body;
  try {
    // `readFileSync(0)` reads standard input to its end.
    return new Uint8Array(readFileSync(flags.bodyFile === '-' ? 0 : flags.bodyFile));
  } catch (error) {
    throw new UsageError(`--body-file: ${(error as Error).message}`);
  }
}

/** The SDK request of the flags (the server validates the values and names a bad one). */
export function publishRequest(destination: string, flags: PublishFlags): PublishRequest {
  const fc = flags.flowControlKey;
  if (fc === undefined && (flags.parallelism ?? flags.rate ?? flags.period) !== undefined) {
    throw new UsageError('--parallelism, --rate and --period need --flow-control-key');
  }
  if (fc !== undefined && flags.parallelism === undefined && flags.rate === undefined) {
    throw new UsageError('--flow-control-key needs --parallelism or --rate');
  }
  return {
    destination,
    body: body(flags),
    contentType: flags.contentType,
    headers: flags.header.length ? Object.fromEntries(flags.header.map(header)) : undefined,
    method: flags.method?.toUpperCase() as HttpMethod | undefined,
    delay: flags.delay,
    retries: flags.retries,
    retryDelay: flags.retryDelay,
    timeout: flags.timeout,
    callback: flags.callback,
    failureCallback: flags.failureCallback,
    label: flags.label.length ? flags.label : undefined,
    flowControl:
      fc === undefined
        ? undefined
        : { key: fc, parallelism: flags.parallelism, rate: flags.rate, period: flags.period },
  };
}
