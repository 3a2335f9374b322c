/**
 * Lists a driver's numbered migration files (`001_init.sql`, `002_add_x.sql`, …) in order. Shared
 * by the SQL drivers: each keeps its own `migrations/` folder next to its module, and the build
 * copies those folders into `dist/` (see `scripts/copy-migrations.mjs`).
 *
 * Migrations are append-only: a shipped file is never edited, a change is a new number.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface MigrationFile {
  /** The leading number of the file name; the order of application and the recorded version. */
  version: number;
  /** The part after `NNN_`, without `.sql` (`init` for `001_init.sql`). */
  name: string;
  /** Absolute path of the file. */
  path: string;
}

const MIGRATION_FILE = /^(\d+)_(.+)\.sql$/;

/**
 * The `NNN_name.sql` files of `dir`, by increasing version. Other files are ignored. Throws when
 * the folder is missing (a packaging error) or two files share a version.
 */
export function listMigrationFiles(dir: string | URL): MigrationFile[] {
  const folder = typeof dir === 'string' ? dir : fileURLToPath(dir);
  let entries: string[];
  try {
    entries = readdirSync(folder);
  } catch (cause) {
    throw new Error(`cannot read the migrations folder ${folder}`, { cause });
  }
  const files: MigrationFile[] = [];
  for (const entry of entries) {
    const match = MIGRATION_FILE.exec(entry);
    if (!match) continue;
    files.push({ version: Number(match[1]), name: match[2] ?? '', path: join(folder, entry) });
  }
  files.sort((a, b) => a.version - b.version);
  for (let i = 1; i < files.length; i++) {
    const [previous, current] = [files[i - 1], files[i]];
    if (previous && current && previous.version === current.version) {
      throw new Error(
        `two migrations have version ${current.version}: ${previous.path}, ${current.path}`,
      );
    }
  }
  return files;
}

/** The SQL text of a migration file. */
export function readMigrationFile(file: MigrationFile): string {
  return readFileSync(file.path, 'utf8');
}

/** What `Driver.migrationStatus` answers: the versions of `files` missing from `applied`. */
export function migrationStatusOf(
  files: readonly MigrationFile[],
  applied: Iterable<number>,
): { pending: number[]; latest: number } {
  const done = new Set(applied);
  return {
    pending: files.filter((f) => !done.has(f.version)).map((f) => f.version),
    latest: files[files.length - 1]?.version ?? 0,
  };
}

/**
 * Refuses a database migrated by a newer Ferry than this one: its code would run against tables
 * it does not know (a column it never fills, a constraint it breaks). `other` says what to use
 * instead of this database (`data directory`, `schema (--database-schema)`).
 */
export function refuseNewerSchema(
  files: readonly MigrationFile[],
  applied: Iterable<number>,
  other: string,
): void {
  const newest = files[files.length - 1]?.version ?? 0;
  const latest = Math.max(0, ...applied);
  if (latest > newest) {
    throw new Error(
      `the database has schema version ${latest}, newer than this Ferry's ${newest}; ` +
        `upgrade Ferry or use another ${other}`,
    );
  }
}
