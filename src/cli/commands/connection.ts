/**
 * Where the client commands connect: flags, then environment variables, then the data
 * directory's `credentials.json` (written by `ferry start`), so that on the server's machine
 * `ferry dlq list` needs no setting at all.
 */
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { FerryAdmin } from '../../sdk/admin.js';
import { FerryClient } from '../../sdk/client.js';
import { UsageError } from '../errors.js';
import { credentialsPath, type Credentials } from '../credentials-file.js';

/** The connection flags of every client command (commander's camelCase names). */
export interface ConnectionFlags {
  url?: string;
  token?: string;
  email?: string;
  apiKey?: string;
  dataDir?: string;
  headerPrefix?: string;
  json?: boolean;
}

const dataDirHelp = 'read credentials.json from this data directory [FERRY_DATA_DIR] (./.ferry)';

/** Adds the messaging API's connection flags and `--json`. */
export function withConnection(command: Command): Command {
  return command
    .option('--url <url>', 'messaging API URL [FERRY_URL]')
    .option('--token <token>', 'account token [FERRY_TOKEN]')
    .option('--data-dir <dir>', dataDirHelp)
    .option('--header-prefix <P>', "the server's header prefix [FERRY_HEADER_PREFIX] (Svc)")
    .option('--json', 'print JSON');
}

/** Adds the management API's connection flags and `--json`. */
export function withAdminConnection(command: Command): Command {
  return command
    .option('--url <url>', 'management API URL [FERRY_MGMT_URL, else FERRY_URL]')
    .option('--email <email>', "a management user's e-mail [FERRY_EMAIL]")
    .option('--api-key <key>', "that user's API key [FERRY_API_KEY]")
    .option('--data-dir <dir>', dataDirHelp)
    .option('--json', 'print JSON');
}

const fromEnv = (env: NodeJS.ProcessEnv, name: string): string | undefined =>
  env[name] === '' ? undefined : env[name];

/** `credentials.json` of the data directory, or nothing when it is missing. */
export function readCredentials(
  flags: ConnectionFlags,
  env: NodeJS.ProcessEnv,
): Partial<Credentials> | undefined {
  const dir = resolve(flags.dataDir ?? fromEnv(env, 'FERRY_DATA_DIR') ?? '.ferry');
  const path = credentialsPath(dir);
  if (!existsSync(path)) return undefined;
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as Partial<Credentials>;
  } catch (error) {
    throw new UsageError(`${path} is not valid JSON: ${(error as Error).message}`);
  }
}

/** The first value set; a {@link UsageError} naming every way to set it when none is. */
function need(what: string, ways: string, ...values: (string | undefined)[]): string {
  const value = values.find((v) => v !== undefined && v !== '');
  if (value === undefined) {
    throw new UsageError(
      `no ${what}: pass ${ways}, or point --data-dir/FERRY_DATA_DIR at a server's data directory`,
    );
  }
  return value;
}

/** The server's header prefix: `--header-prefix`, else `FERRY_HEADER_PREFIX`, else `Svc`. */
export function headerPrefix(flags: ConnectionFlags, env: NodeJS.ProcessEnv = process.env): string {
  return flags.headerPrefix ?? fromEnv(env, 'FERRY_HEADER_PREFIX') ?? 'Svc';
}

export function messagingClient(
  flags: ConnectionFlags,
  env: NodeJS.ProcessEnv = process.env,
): FerryClient {
  const url = flags.url ?? fromEnv(env, 'FERRY_URL');
  const token = flags.token ?? fromEnv(env, 'FERRY_TOKEN');
  const creds = url && token ? undefined : readCredentials(flags, env);
  return new FerryClient({
    baseUrl: need('server URL', '--url or set FERRY_URL', url, creds?.baseUrl),
    token: need('token', '--token or set FERRY_TOKEN', token, creds?.token),
    headerPrefix: headerPrefix(flags, env),
  });
}

export function adminClient(
  flags: ConnectionFlags,
  env: NodeJS.ProcessEnv = process.env,
): FerryAdmin {
  const url = flags.url ?? fromEnv(env, 'FERRY_MGMT_URL') ?? fromEnv(env, 'FERRY_URL');
  const email = flags.email ?? fromEnv(env, 'FERRY_EMAIL');
  const apiKey = flags.apiKey ?? fromEnv(env, 'FERRY_API_KEY');
  const creds = url && email && apiKey ? undefined : readCredentials(flags, env);
  return new FerryAdmin({
    baseUrl: need('management URL', '--url or set FERRY_MGMT_URL', url, creds?.mgmtUrl),
    email: need('e-mail', '--email or set FERRY_EMAIL', email, creds?.email),
    apiKey: need('API key', '--api-key or set FERRY_API_KEY', apiKey, creds?.apiKey),
  });
}
