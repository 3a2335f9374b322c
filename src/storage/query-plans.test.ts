/**
 * The engine's hot statements must stay index lookups however many messages wait (issue 16: a
 * backlog of delayed messages must not slow delivery). With 20,000 delayed messages stored, the
 * test runs the claim (with its next-due lookup), the outcome statement, the fenced delete of
 * delivered messages, and the logs' lookups of a workflow run's messages and of a run by a
 * message id, through the real driver; it records the statements it sends (the drivers' `trace`
 * option) and asks the database for their plans: EXPLAIN on PostgreSQL (after ANALYZE, so the
 * planner knows the table is large; for the engine's claim and outcome statement also their
 * generic plans, which the driver runs them with), EXPLAIN QUERY PLAN on SQLite. A plan that
 * reads the messages table by a scan, or a full scan of one of its indexes, fails the test. The
 * generic plans are also made on a table of one message, never analyzed, as a connection of a
 * fresh node makes them, and must read by index there as well.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import Database from 'better-sqlite3';
import postgres from 'postgres';
import { afterAll, describe, expect, it } from 'vitest';
import type { ClaimedMessage, Message } from '../core/types.js';
import type { Driver } from './driver.js';
import { makeAccount, makeMessage } from './conformance/fixtures.js';
import { makeRun } from './conformance/workflow-cases.js';
import { FIXED_POOL_SETTINGS, openPostgresDriver } from './postgres/postgres-driver.js';
import { quoteIdentifier } from './postgres/postgres-migrate.js';
import { openSqliteDriver } from './sqlite/sqlite-driver.js';

const BACKLOG = 20_000;
const DUE_NOW = 10;
const NOW = Date.UTC(2026, 0, 1);
/** The operations runHotPath marks. */
const HOT_OPS = ['claim', 'claim (limited)', 'delete', 'finish', 'run by message', 'run messages'];
/** The workflow run whose messages the logs look up (RUN_MESSAGES of them wait in the backlog). */
const RUN_ID = 'wfr_plans';
const RUN_MESSAGES = 3;

/**
 * Stores the backlog (due in a day), the run's messages (and the run) and DUE_NOW messages due
 * now. Returns the id of one of the run's messages.
 */
async function seed(driver: Driver, accountId: string): Promise<string> {
  const later = NOW + 86_400_000;
  for (let done = 0; done < BACKLOG; done += 5_000) {
    const messages: Message[] = Array.from({ length: 5_000 }, (_, i) =>
      makeMessage(accountId, { createdAt: NOW, dueAt: later + done + i, notBefore: later }),
    );
    await driver.executor.messageInsertMany({ messages });
  }
  const workflow = { runId: RUN_ID, url: 'https://app.example.com/wf', createdAt: NOW };
  await driver.executor.workflowRunInsert({ run: makeRun(accountId, workflow) });
  const runMessages = Array.from({ length: RUN_MESSAGES }, () =>
    makeMessage(accountId, {
      createdAt: NOW,
      dueAt: later,
      notBefore: later,
      spec: { method: 'POST', headers: {}, workflow: { ...workflow, callType: 'toCallback' } },
    }),
  );
  await driver.executor.messageInsertMany({ messages: runMessages });
  await driver.executor.messageInsertMany({
    messages: Array.from({ length: DUE_NOW }, () => makeMessage(accountId, { createdAt: NOW })),
  });
  return (runMessages[0] as Message).id;
}

/** Runs the hot operations; `mark` names the operation the next statements belong to. */
async function runHotPath(
  driver: Driver,
  accountId: string,
  runMessageId: string,
  mark: (op: string) => void,
): Promise<void> {
  const ex = driver.executor;
  mark('claim');
  const claimed: ClaimedMessage[] = await ex.messageClaimDue({
    now: NOW,
    limit: 5,
    leaseUntil: NOW + 30_000,
  });
  mark('claim (limited)');
  const limited = await ex.messageClaimDueLimited({
    now: NOW,
    limit: 5,
    leaseUntil: NOW + 30_000,
    maxInFlightByPlan: { paid: 1_000 },
    // A congested origin: the claim reads past its rows (none here) with the statement it uses
    // then (on SQLite another statement than the plain claim's).
    originRooms: [{ origin: 'https://congested.example', room: 0 }],
  });
  expect(claimed.length + limited.messages.length).toBe(DUE_NOW);
  const [first, ...rest] = [...claimed, ...limited.messages] as [
    ClaimedMessage,
    ...ClaimedMessage[],
  ];
  mark('finish');
  // The outcome writer's statement for a plain delivery (its delete and its events).
  expect(
    await ex.messageFinishMany({ events: [], finished: [{ lease: first, events: [] }] }),
  ).toEqual([first.id]);
  mark('delete');
  const deleted = await ex.messageDeleteLeasedMany({ leases: rest });
  expect(deleted).toHaveLength(DUE_NOW - 1);
  // The limited claim also read the next due time (in its statement on PostgreSQL, right after
  // it on SQLite), which the plans below check with it.
  expect(limited.nextDueAt).toBe(NOW + 30_000);
  mark('run messages');
  // The logs' `next` group of a running run (engine/workflow-pending.ts).
  const run = await ex.messageList({
    accountId,
    filter: { workflowRunIds: [RUN_ID] },
    count: 500,
    bodyCut: 0,
  });
  expect(run.items).toHaveLength(RUN_MESSAGES);
  mark('run by message');
  // The logs' messageId filter: a message not final yet finds its run (by the primary key).
  const found = await ex.workflowRunList({
    accountId,
    filter: { messageIds: [runMessageId] },
    count: 10,
  });
  expect(found.items.map((r) => r.runId)).toEqual([RUN_ID]);
  mark('');
}

/** Statements that touch the messages table, by operation. */
type Traced = { op: string; text: string; params: readonly unknown[] }[];

const touchesMessages = (text: string): boolean => /\bmessages\b/i.test(text);

describe('query plans with a backlog: sqlite', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ferry-plans-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('claims, deletes and finds the next due time through indexes', async () => {
    const path = join(dir, 'ferry.db');
    let op = '';
    const traced: Traced = [];
    const driver = openSqliteDriver({
      path,
      trace: (text) => {
        if (op && touchesMessages(text)) traced.push({ op, text, params: [] });
      },
    });
    await driver.migrate();
    const account = makeAccount();
    await driver.executor.accountInsert({ account });
    const runMessageId = await seed(driver, account.id);
    await runHotPath(driver, account.id, runMessageId, (next) => (op = next));
    await driver.close();
    // The driver holds the file exclusively while open; the plans are asked for afterwards,
    // from the statements as they ran (values included).
    const db = new Database(path, { readonly: true });
    try {
      db.exec('ANALYZE');
    } catch {
      // read-only: the plans then come without statistics, as in a fresh deployment
    }
    const ops = new Set(traced.map((t) => t.op));
    expect([...ops].sort()).toEqual(HOT_OPS);
    for (const { op: name, text } of traced) {
      const plan = db.prepare(`EXPLAIN QUERY PLAN ${text}`).all() as { detail: string }[];
      const scans = plan.filter((row) => /^SCAN messages\b/.test(row.detail));
      expect(scans, `${name}: ${text}\n${plan.map((r) => r.detail).join('\n')}`).toEqual([]);
      expect(plan.some((row) => /^SEARCH messages USING/.test(row.detail))).toBe(true);
    }
    db.close();
  });
});

const url = process.env.TEST_DATABASE_URL;

/** Nodes of a PostgreSQL JSON plan that read `relation`. */
function readsOf(node: Record<string, unknown>, relation: string): string[] {
  const here = node['Relation Name'] === relation ? [String(node['Node Type'])] : [];
  const children = (node.Plans as Record<string, unknown>[] | undefined) ?? [];
  return [...here, ...children.flatMap((child) => readsOf(child, relation))];
}

/** The operations PostgreSQL runs with generic plans (the driver's `fixed` pool). */
const GENERIC_OPS = new Set(['claim (limited)', 'finish']);

/** Nodes of a PostgreSQL JSON plan that read `relation` without a condition on an index or ctid. */
function unboundedReadsOf(node: Record<string, unknown>, relation: string): string[] {
  const bounded = node['Index Cond'] !== undefined || node['TID Cond'] !== undefined;
  const type = String(node['Node Type']);
  const scan = node['Relation Name'] === relation && type.endsWith('Scan');
  const here = scan && !bounded ? [type] : [];
  const children = (node.Plans as Record<string, unknown>[] | undefined) ?? [];
  return [...here, ...children.flatMap((child) => unboundedReadsOf(child, relation))];
}

/** Hash and merge joins of a PostgreSQL JSON plan that read `relation` on one of their sides. */
function bulkJoinsOf(node: Record<string, unknown>, relation: string): string[] {
  const type = String(node['Node Type']);
  const here =
    (type === 'Hash Join' || type === 'Merge Join') && readsOf(node, relation).length > 0
      ? [type]
      : [];
  const children = (node.Plans as Record<string, unknown>[] | undefined) ?? [];
  return [...here, ...children.flatMap((child) => bulkJoinsOf(child, relation))];
}

/**
 * Fails unless `plan` reads the messages table, and never by a sequential or bitmap scan; with
 * `bounded`, every read must also be bounded by an index condition (not a whole index read) and
 * every join with it a per-row lookup (no hash or merge join, which reads all the rows its index
 * condition allows, such as every due message).
 */
function expectIndexReads(
  name: string,
  text: string,
  plan: Record<string, unknown>,
  bounded = false,
): void {
  const reads = readsOf(plan, 'messages');
  const detail = `${name}: ${text}\n${JSON.stringify(plan, null, 1)}`;
  expect(reads.length, detail).toBeGreaterThan(0);
  expect(
    reads.filter((type) => type === 'Seq Scan' || type === 'Bitmap Heap Scan'),
    detail,
  ).toEqual([]);
  if (bounded) {
    expect(unboundedReadsOf(plan, 'messages'), detail).toEqual([]);
    expect(bulkJoinsOf(plan, 'messages'), detail).toEqual([]);
  }
}

describe.skipIf(!url)('query plans with a backlog: postgres', () => {
  const schema = `ferry_plans_${randomBytes(6).toString('hex')}`;
  /** One due message, never analyzed: where a fresh node's connections plan. */
  const smallSchema = `${schema}_empty`;
  const admin = postgres(url ?? '', {
    max: 1,
    onnotice: () => {},
    connection: { search_path: quoteIdentifier(schema) },
  });
  afterAll(async () => {
    for (const name of [schema, smallSchema]) {
      await admin.unsafe(`DROP SCHEMA IF EXISTS ${quoteIdentifier(name)} CASCADE`);
    }
    await admin.end({ timeout: 5 });
  });

  /**
   * The generic plan of `text` (PostgreSQL 15 has no EXPLAIN (GENERIC_PLAN)): prepared with the
   * settings of the driver's `fixed` pool and EXPLAINed as an EXECUTE whose arguments are the
   * parameters as literals of the types the statement infers for them; planned in `inSchema`.
   */
  async function genericPlan(
    text: string,
    params: readonly unknown[],
    inSchema: string,
  ): Promise<Record<string, unknown>> {
    for (const [name, value] of Object.entries(FIXED_POOL_SETTINGS)) {
      await admin.unsafe(`SET ${name} = ${value}`);
    }
    await admin.unsafe(`SET search_path = ${quoteIdentifier(inSchema)}`);
    await admin.unsafe(`PREPARE hot AS ${text}`);
    try {
      const [prepared] = await admin.unsafe<{ types: string[] }[]>(
        "SELECT parameter_types::text[] AS types FROM pg_prepared_statements WHERE name = 'hot'",
      );
      const literals = await Promise.all(
        (prepared?.types ?? []).map(async (type, i) => {
          const [row] = await admin.unsafe<{ literal: string }[]>(
            `SELECT quote_nullable($1::text) AS literal`,
            [params[i] as postgres.ParameterOrJSON<never>],
          );
          return `${row?.literal ?? 'NULL'}::${type}`;
        }),
      );
      const [row] = await admin.unsafe<{ 'QUERY PLAN': Record<string, unknown>[] }[]>(
        `EXPLAIN (FORMAT JSON) EXECUTE hot(${literals.join(', ')})`,
      );
      return row?.['QUERY PLAN'][0]?.Plan as Record<string, unknown>;
    } finally {
      await admin.unsafe('DEALLOCATE hot');
      for (const name of Object.keys(FIXED_POOL_SETTINGS)) await admin.unsafe(`RESET ${name}`);
      await admin.unsafe(`SET search_path = ${quoteIdentifier(schema)}`);
    }
  }

  it('claims, deletes and finds the next due time through indexes', async () => {
    let op = '';
    const traced: Traced = [];
    const driver = openPostgresDriver({
      url: url ?? '',
      schema,
      trace: (text, params) => {
        if (op && touchesMessages(text)) traced.push({ op, text, params });
      },
    });
    try {
      await driver.migrate();
      const account = makeAccount({ plan: 'paid' });
      await driver.executor.accountInsert({ account });
      const runMessageId = await seed(driver, account.id);
      await admin.unsafe('ANALYZE messages');
      await runHotPath(driver, account.id, runMessageId, (next) => (op = next));
    } finally {
      await driver.close();
    }
    const small = openPostgresDriver({ url: url ?? '', schema: smallSchema });
    try {
      await small.migrate();
      const account = makeAccount({ plan: 'paid' });
      await small.executor.accountInsert({ account });
      await small.executor.messageInsertMany({ messages: [makeMessage(account.id)] });
    } finally {
      await small.close();
    }
    const ops = new Set(traced.map((t) => t.op));
    expect([...ops].sort()).toEqual(HOT_OPS);
    for (const { op: name, text, params } of traced) {
      const [row] = await admin.unsafe<{ 'QUERY PLAN': Record<string, unknown>[] }[]>(
        `EXPLAIN (FORMAT JSON) ${text}`,
        params as postgres.ParameterOrJSON<never>[],
      );
      // A run's messages are few among many: read by the index's condition, never by a walk of
      // the primary key in id order with the run as a filter.
      const plan = row?.['QUERY PLAN'][0]?.Plan as Record<string, unknown>;
      expectIndexReads(name, text, plan, name === 'run messages' || name === 'run by message');
      // The engine's claim and outcome statements run with generic plans (postgres-driver.ts,
      // `fixed`), planned without the parameters' values: those plans must read by index too.
      if (GENERIC_OPS.has(name)) {
        for (const where of [schema, smallSchema]) {
          const plan = await genericPlan(text, params, where);
          expectIndexReads(`${name} (generic plan, ${where})`, text, plan, true);
        }
      }
    }
  });
});
