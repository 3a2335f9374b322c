/**
 * Migration 016 (the workflow filters host, path, messageId and responseStatus) fills the new
 * columns of the runs stored before it: a database at version 15 finds its runs by the host and
 * path of their URL and its DLQ entries by their response status after the upgrade.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import postgres from 'postgres';
import { describe, expect, it } from 'vitest';
import { listMigrationFiles, readMigrationFile } from '../src/storage/migrate-files.js';
import type { Driver, WorkflowRunFilter } from '../src/storage/driver.js';
import { openSqliteDriver } from '../src/storage/sqlite/sqlite-driver.js';
import { openPostgresDriver } from '../src/storage/postgres/postgres-driver.js';
import { workflowRunValues } from '../src/storage/sql/workflow-rows.js';
import { makeMessage } from '../src/storage/conformance/fixtures.js';
import { makeRun } from '../src/storage/conformance/workflow-cases.js';
import { pgUrl, STORAGES } from './helpers/ferry.js';

const ACCOUNT = 'acct_migrated';
/** The columns of `workflow_runs` before 016. */
const COLUMNS = [
  'account_id',
  'run_id',
  'url',
  'state',
  'created_at',
  'updated_at',
  'caller_ip',
  'labels',
  'flow_control_key',
  'dlq_id',
  'failure_state',
  'doc',
];

const RUNS = [
  makeRun(ACCOUNT, { runId: 'wfr_port', url: 'https://App.example.com:8080/api/wf?x=1#top' }),
  makeRun(ACCOUNT, { runId: 'wfr_bare', url: 'http://bare.example.com', createdAt: 1 }),
  makeRun(ACCOUNT, {
    runId: 'wfr_failed',
    url: 'https://app.example.com/api/fail',
    state: 'RUN_FAILED',
    dlq: {
      dlqId: 'dlq_0000000001',
      createdAt: 1,
      message: makeMessage(ACCOUNT),
      responseStatus: 503,
    },
  }),
];

async function checkMigrated(driver: Driver): Promise<void> {
  await driver.migrate();
  const ids = async (filter: WorkflowRunFilter) =>
    (await driver.executor.workflowRunList({ accountId: ACCOUNT, filter, count: 10 })).items
      .map((r) => r.runId)
      .sort();
  expect(await ids({ hosts: ['app.example.com:8080'] })).toEqual(['wfr_port']);
  expect(await ids({ paths: ['/api/wf'] })).toEqual(['wfr_port']);
  expect(await ids({ hosts: ['bare.example.com'], paths: ['/'] })).toEqual(['wfr_bare']);
  expect(await ids({ hosts: ['app.example.com'], paths: ['/api/fail'] })).toEqual(['wfr_failed']);
  expect(await ids({ inDlq: true, responseStatuses: [503] })).toEqual(['wfr_failed']);
  expect(await ids({ inDlq: true, responseStatuses: [500] })).toEqual([]);
}

describe.each(STORAGES)('migration 016 on %s', (storage) => {
  it('fills host, path and the DLQ response status of the runs stored before', async () => {
    const dirs = new URL(
      storage === 'sqlite'
        ? '../src/storage/sqlite/migrations/'
        : '../src/storage/postgres/migrations/',
      import.meta.url,
    );
    const before = listMigrationFiles(dirs).filter((f) => f.version < 16);
    const rows = RUNS.map((run) => workflowRunValues(run).slice(0, COLUMNS.length));
    if (storage === 'sqlite') {
      const dir = mkdtempSync(join(tmpdir(), 'ferry-m016-'));
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
        const insert = db.prepare(
          `INSERT INTO workflow_runs (${COLUMNS.join(', ')}) VALUES (${COLUMNS.map(() => '?').join(', ')})`,
        );
        for (const row of rows) insert.run(...row);
        db.close();
        const driver = openSqliteDriver({ path });
        try {
          await checkMigrated(driver);
        } finally {
          await driver.close();
        }
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
      return;
    }
    const schema = `m016_${Date.now()}_${Math.floor(Math.random() * 1e6)}`;
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
        for (const row of rows) {
          await tx.unsafe(
            `INSERT INTO workflow_runs (${COLUMNS.join(', ')}) VALUES (${COLUMNS.map((_, i) => `$${i + 1}`).join(', ')})`,
            row,
          );
        }
      });
      const driver = openPostgresDriver({ url: pgUrl ?? '', schema });
      try {
        await checkMigrated(driver);
      } finally {
        await driver.close();
      }
    } finally {
      await sql.unsafe(`DROP SCHEMA ${schema} CASCADE`);
      await sql.end();
    }
  });
});
