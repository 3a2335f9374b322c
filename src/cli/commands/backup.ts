/**
 * `ferry backup <file>`: an online copy of a running server's SQLite database, taken by the
 * server (`POST /v2/admin/backup`) and checked here. `ferry restore <file> --data-dir <dir>`:
 * puts a copy in place of a data directory's database while no Ferry runs on it.
 */
import { chmodSync, copyFileSync, existsSync, renameSync, rmSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createWriteStream } from 'node:fs';
import { Command } from 'commander';
import { credentialsPath } from '../credentials-file.js';
import { makeDataDir } from '../data-dir.js';
import { secretKeyPath } from '../secret-key.js';
import { UsageError } from '../errors.js';
import { act } from './action.js';
import { adminClient, withAdminConnection, type ConnectionFlags } from './connection.js';
import { print, record } from './output.js';

/** The file name of the database in a data directory (see `openDriver` in app.ts). */
const DB_FILE = 'ferry.db';

function backupCommand(): Command {
  return act<ConnectionFlags & { force?: boolean }>(
    withAdminConnection(
      new Command('backup')
        .description("copy a running server's SQLite database into <file>, online")
        .argument('<file>', 'where to write the copy (mode 0600)')
        .option('--force', 'overwrite <file> if it exists'),
    ),
    async (opts, [file = '']) => {
      const target = resolve(file);
      if (existsSync(target) && !opts.force) {
        throw new UsageError(`${target} exists; pass --force to overwrite it`);
      }
      const partial = `${target}.partial`;
      const started = Date.now();
      try {
        const body = await adminClient(opts).backup();
        await pipeline(Readable.fromWeb(body), createWriteStream(partial, { mode: 0o600 }));
        const { checkBackup } = await import('./backup-files.js');
        const version = checkBackup(partial, true);
        renameSync(partial, target);
        const result = {
          file: target,
          bytes: statSync(target).size,
          schemaVersion: version,
          ms: Date.now() - started,
        };
        print(opts.json, result, () =>
          record([
            ['backup', result.file],
            ['bytes', result.bytes],
            ['schema version', result.schemaVersion],
            ['took', `${result.ms} ms`],
          ]),
        );
      } finally {
        rmSync(partial, { force: true });
      }
    },
  );
}

function restoreCommand(): Command {
  return act<{
    dataDir: string;
    credentials?: string;
    secretKeyFile?: string;
    force?: boolean;
    json?: boolean;
  }>(
    new Command('restore')
      .description("put a backup in place of a data directory's database (Ferry stopped)")
      .argument('<file>', 'a file written by ferry backup')
      .requiredOption('--data-dir <dir>', 'the data directory to restore into (created if missing)')
      .option('--credentials <file>', 'also install this credentials.json (mode 0600)')
      .option('--secret-key-file <file>', 'also install this secret.key (mode 0600)')
      .option('--force', 'replace the database the directory already has')
      .option('--json', 'print JSON'),
    async (opts, [file = '']) => {
      const { checkBackup, lockForRestore, restoreInto } = await import('./backup-files.js');
      const source = resolve(file);
      const version = checkBackup(source);
      const dir = resolve(opts.dataDir);
      const target = join(dir, DB_FILE);
      makeDataDir(dir);
      const lock = lockForRestore(target);
      try {
        await restoreInto(source, target, opts.force === true);
      } finally {
        lock.release();
      }
      const creds = credentialsPath(dir);
      if (opts.credentials !== undefined) {
        copyFileSync(resolve(opts.credentials), creds);
        chmodSync(creds, 0o600);
      } else if (!existsSync(creds)) {
        process.stderr.write(
          `ferry: no credentials.json in ${dir}: copy the backed-up server's there (or pass ` +
            '--credentials), else the next start creates a new default account and administrator\n',
        );
      }
      // The database's stored secrets are sealed with the backed-up server's key: a start
      // without it makes a new key, and the management API then shows them empty.
      const key = secretKeyPath(dir);
      if (opts.secretKeyFile !== undefined) {
        copyFileSync(resolve(opts.secretKeyFile), key);
        chmodSync(key, 0o600);
      } else if (!existsSync(key) && !process.env.FERRY_SECRET_KEY) {
        process.stderr.write(
          `ferry: no secret.key in ${dir}: copy the backed-up server's there (or pass ` +
            "--secret-key-file), else the credentials the database keeps sealed (accounts' " +
            'passwords and tokens shown by the management API) cannot be read after start\n',
        );
      }
      const result = { dataDir: dir, database: target, schemaVersion: version };
      print(opts.json, result, () =>
        record([
          ['restored', target],
          ['schema version', version],
          ['start with', `ferry start --data-dir ${dir}`],
        ]),
      );
    },
  );
}

export const backupCommands = (): Command[] => [backupCommand(), restoreCommand()];
