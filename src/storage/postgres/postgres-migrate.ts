/**
 * Applies the numbered `.sql` files of `./migrations/` (next to the compiled module: the build
 * copies them to `dist/`, tests read them from `src/`) in order, each once, recording them in
 * `ferry_migrations`.
 */
import type postgres from 'postgres';
import type { MigrationStatus } from '../driver.js';
import {
  listMigrationFiles,
  migrationStatusOf,
  readMigrationFile,
  refuseNewerSchema,
} from '../migrate-files.js';

/** Key of the transaction-scoped advisory lock that serializes migrations across nodes. */
const MIGRATION_LOCK_KEY = 0x4665_7272_7901; // "Ferry" + 1, fits a BIGINT

const MIGRATIONS_DIR = new URL('./migrations/', import.meta.url);

/** `name` as a quoted SQL identifier. */
export function quoteIdentifier(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/**
 * Creates `schema` if missing and applies pending migrations, all in one transaction that holds
 * `pg_advisory_xact_lock`: a second node starting at the same time waits for the first, then
 * sees its versions recorded and applies nothing. Unlike SQLite (one process per file, where
 * the write lock of `BEGIN IMMEDIATE` suffices), PostgreSQL needs the advisory lock because even
 * `CREATE … IF NOT EXISTS` races between sessions (a unique violation in the catalog).
 */
export async function migratePostgres(sql: postgres.Sql, schema: string): Promise<void> {
  const migrations = listMigrationFiles(MIGRATIONS_DIR);
  await sql.begin(async (tx) => {
    await tx`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK_KEY})`;
    // Checked first because CREATE SCHEMA IF NOT EXISTS needs the CREATE privilege on the
    // database even when the schema exists (as `public` does for least-privilege users).
    const [found] = await tx`SELECT 1 FROM pg_namespace WHERE nspname = ${schema}`;
    if (!found) await tx.unsafe(`CREATE SCHEMA ${quoteIdentifier(schema)}`);
    await tx`
      CREATE TABLE IF NOT EXISTS ferry_migrations (
        version    INTEGER PRIMARY KEY,
        name       TEXT NOT NULL,
        applied_at BIGINT NOT NULL
      )`;
    const rows = await tx<{ version: number }[]>`SELECT version FROM ferry_migrations`;
    const applied = new Set(rows.map((row) => row.version));
    refuseNewerSchema(migrations, applied, 'schema (--database-schema)');
    for (const migration of migrations) {
      if (applied.has(migration.version)) continue;
      // No parameters: the simple protocol runs every statement of the file.
      await tx.unsafe(readMigrationFile(migration));
      // applied_at is bookkeeping for operators, not something a test steps, so the wall clock.
      await tx`
        INSERT INTO ferry_migrations (version, name, applied_at)
        VALUES (${migration.version}, ${migration.name}, ${Date.now()})`;
    }
  });
}

/**
 * The migrations of this build missing from the schema; all of them when the schema or its
 * `ferry_migrations` table is gone. Rejects when PostgreSQL does not answer.
 */
export async function postgresMigrationStatus(sql: postgres.Sql): Promise<MigrationStatus> {
  // to_regclass resolves through the search_path (the schema): NULL when the table is missing.
  const [found] = await sql<{ t: string | null }[]>`SELECT to_regclass('ferry_migrations') AS t`;
  const rows = found?.t
    ? await sql<{ version: number }[]>`SELECT version FROM ferry_migrations`
    : [];
  return migrationStatusOf(
    listMigrationFiles(MIGRATIONS_DIR),
    rows.map((r) => r.version),
  );
}
