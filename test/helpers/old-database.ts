/**
 * A database left at an older schema version, holding rows written the way that version wrote
 * them, then opened by today's driver (which migrates it forward): how the migration tests check
 * that a migration carries existing data over.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import postgres from 'postgres';
import { listMigrationFiles, readMigrationFile } from '../../src/storage/migrate-files.js';
import type { Driver } from '../../src/storage/driver.js';
import { openSqliteDriver } from '../../src/storage/sqlite/sqlite-driver.js';
import { openPostgresDriver } from '../../src/storage/postgres/postgres-driver.js';
import { pgUrl } from './ferry.js';

/** A row of the old schema: its table, columns and values. */
export type OldRow = [table: string, columns: readonly string[], values: readonly unknown[]];

/**
 * Builds a database at the migrations below `version`, inserts `rows`, opens it with today's
 * driver and runs `check` on it; the database is removed afterwards.
 */
export async function upgradedFrom(
  storage: 'sqlite' | 'postgres',
  version: number,
  rows: readonly OldRow[],
  check: (driver: Driver) => Promise<void>,
): Promise<void> {
  const dirs = new URL(`../../src/storage/${storage}/migrations/`, import.meta.url);
  const before = listMigrationFiles(dirs).filter((f) => f.version < version);
  const insert = (table: string, columns: readonly string[], placeholder: (i: number) => string) =>
    `INSERT INTO ${table} (${columns.join(', ')}) VALUES (${columns.map((_, i) => placeholder(i)).join(', ')})`;
  const checked = async (driver: Driver): Promise<void> => {
    try {
      await check(driver);
    } finally {
      await driver.close();
    }
  };
  if (storage === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), `ferry-m${version}-`));
    try {
      const path = join(dir, 'ferry.db');
      const db = new Database(path);
      db.exec(
        'CREATE TABLE ferry_migrations (version INTEGER PRIMARY KEY, name TEXT, applied_at INTEGER)',
      );
      for (const file of before) {
        db.exec(readMigrationFile(file));
        db.prepare('INSERT INTO ferry_migrations VALUES (?, ?, 0)').run(file.version, file.name);
      }
      for (const [table, columns, values] of rows) {
        db.prepare(insert(table, columns, () => '?')).run(...values);
      }
      db.close();
      await checked(openSqliteDriver({ path }));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    return;
  }
  const schema = `m${version}_${Date.now()}_${Math.floor(Math.random() * 1e6)}`;
  const sql = postgres(pgUrl ?? '', { onnotice: () => undefined });
  try {
    await sql.unsafe(`CREATE SCHEMA ${schema}`);
    await sql.begin(async (tx) => {
      await tx.unsafe(`SET LOCAL search_path TO ${schema}`);
      await tx.unsafe(
        'CREATE TABLE ferry_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)',
      );
      for (const file of before) {
        await tx.unsafe(readMigrationFile(file));
        await tx`INSERT INTO ferry_migrations VALUES (${file.version}, ${file.name}, 0)`;
      }
      for (const [table, columns, values] of rows) {
        await tx.unsafe(
          insert(table, columns, (i) => `$${i + 1}`),
          values as postgres.ParameterOrJSON<never>[],
        );
      }
    });
    await checked(openPostgresDriver({ url: pgUrl ?? '', schema }));
  } finally {
    await sql.unsafe(`DROP SCHEMA ${schema} CASCADE`);
    await sql.end();
  }
}
