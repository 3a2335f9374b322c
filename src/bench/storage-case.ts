/**
 * The storage case (`--case storage`): the storage work of a delivered message, without HTTP,
 * the engine or the delivery thread, in this process. Each round publishes BATCH messages with
 * their CREATED events as the publisher writes a plain batch (a transaction on SQLite, one
 * statement on PostgreSQL), claims them as the engine does (`messageClaimDueLimited`, under the
 * default plans' `max_global_parallelism`) and finishes them (`messageFinishMany`: the fenced
 * delete and the merged ACTIVE and DELIVERED rows, the outcome writer's usual write). The
 * figures are this process's CPU per message for each step (all its threads: the SQLite
 * driver's fsyncs run on libuv's pool) and, on PostgreSQL, the server's, in all and by step.
 *
 * End-to-end runs on this shared machine vary by ±10–20 % from one to the next; this case varies
 * by a few per cent, so it resolves storage changes of a microsecond or two per message. With
 * `--baseline DIR` the same rounds run on that build's storage modules, alternating.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import type { Account, EventRecord, Message } from '../core/types.js';
import type { Driver } from '../storage/driver.js';
import { bodyMaker } from './body.js';
import { postgresPids, postgresRunNanos, postgresServerCpuSeconds } from './peer.js';

/** Messages per transaction, claim and finish: about what the group commit batches under load. */
const BATCH = 50;

/**
 * The default plans' `max_global_parallelism`, which the engine's claim keeps every account
 * within (on PostgreSQL by counting the account's leases in the claim's statement).
 */
const MAX_IN_FLIGHT_BY_PLAN = { free: 100, paid: 1_000 };

/** The modules of one build this case uses (this build's, or `--baseline`'s). */
interface Build {
  openSqliteDriver: (options: { path: string }) => Driver;
  openPostgresDriver: (options: { url: string; schema: string }) => Driver;
  newId: (prefix: string, now?: number) => string;
  newSigningKey: () => string;
  eventOf: (
    message: Message,
    state: EventRecord['state'],
    time: number,
    extra?: Partial<EventRecord>,
  ) => EventRecord;
}

/** Loads a build's modules from its `dist` folder. */
export async function loadBuild(dist: string): Promise<Build> {
  const load = async <T>(path: string): Promise<T> =>
    (await import(pathToFileURL(join(dist, path)).href)) as T;
  const [sqlite, pg, ids, records] = await Promise.all([
    load<Pick<Build, 'openSqliteDriver'>>('storage/sqlite/sqlite-driver.js'),
    load<Pick<Build, 'openPostgresDriver'>>('storage/postgres/postgres-driver.js'),
    load<Pick<Build, 'newId' | 'newSigningKey'>>('core/ids.js'),
    load<Pick<Build, 'eventOf'>>('engine/records.js'),
  ]);
  return { ...sqlite, ...pg, ...ids, ...records };
}

/**
 * CPU µs per message of each step, and the PostgreSQL server's over the whole run and in each
 * step (`serverPublish`, …: the run time of its processes while the step ran).
 */
export interface StorageRun {
  publish: number;
  claim: number;
  finish: number;
  total: number;
  server?: number;
  serverPublish?: number;
  serverClaim?: number;
  serverFinish?: number;
}

/** Every message's body by default: one buffer of about 110 bytes, as the case always had. */
const DEFAULT_BODY = Buffer.from(bodyMaker()('message 1'));

/**
 * One run of `n` messages on a fresh store of `storage`, removed afterwards; `bodyOf(i)` is
 * message i's body. A body over 4 KiB is stored once per buffer (`bodies`), so a body of that
 * size must be a buffer of its own per message for the run to store one per message, as
 * publishes do.
 */
export async function runStorage(
  build: Build,
  storage: 'sqlite' | 'postgres',
  n: number,
  withSql: (
    fn: (sql: { unsafe: (q: string) => Promise<unknown> }) => Promise<unknown>,
  ) => Promise<unknown>,
  bodyOf: (i: number) => Uint8Array = () => DEFAULT_BODY,
): Promise<StorageRun> {
  const dir = mkdtempSync(join(tmpdir(), 'ferry-bench-storage-'));
  const schema = `ferry_bench_${randomBytes(4).toString('hex')}`;
  const driver =
    storage === 'sqlite'
      ? build.openSqliteDriver({ path: join(dir, 'ferry.db') })
      : build.openPostgresDriver({ url: process.env.TEST_DATABASE_URL as string, schema });
  try {
    await driver.migrate();
    const ex = driver.executor;
    const account: Account = {
      id: build.newId('acct'),
      plan: 'paid',
      passwordHash: 'a'.repeat(64),
      currentSigningKey: build.newSigningKey(),
      nextSigningKey: build.newSigningKey(),
      createdAt: Date.now(),
    };
    await ex.accountInsert({ account });
    const cpu = { publish: 0, claim: 0, finish: 0 };
    // The server's run time in each step, in ns: read outside the step's own CPU figure.
    const server = { publish: 0, claim: 0, finish: 0 };
    const postgres = storage === 'postgres';
    let pids: number[] = [];
    const timed = async <T>(step: keyof typeof cpu, fn: () => Promise<T>): Promise<T> => {
      const serverBefore = postgres ? postgresRunNanos(pids) : 0;
      const start = process.cpuUsage();
      const result = await fn();
      const used = process.cpuUsage(start);
      cpu[step] += used.user + used.system;
      if (postgres) server[step] += postgresRunNanos(pids) - serverBefore;
      return result;
    };
    const serverStart = postgres ? postgresServerCpuSeconds() : NaN;
    let now = Date.now();
    for (let done = 0; done < n; done += BATCH) {
      // The pool opens connections as it needs them: look for new backends now and then.
      if (postgres && done % (BATCH * 50) === 0) pids = postgresPids();
      // Five messages a millisecond: about the rate of the end-to-end case.
      const messages: Message[] = [];
      for (let i = 0; i < BATCH; i += 1) {
        now += 0.2;
        const t = Math.floor(now);
        messages.push({
          id: build.newId('msg', t),
          accountId: account.id,
          url: 'http://127.0.0.1:9/storage',
          callerIp: '127.0.0.1',
          retried: 0,
          maxRetries: 3,
          notBefore: t,
          createdAt: t,
          dueAt: t,
          spec: { method: 'POST', headers: { 'Content-Type': ['text/plain'] } },
          body: bodyOf(done + i),
        });
      }
      const events = messages.map((m) => build.eventOf(m, 'CREATED', m.createdAt));
      // As the publisher writes a plain batch: on PostgreSQL one statement (no BEGIN and
      // COMMIT), on SQLite a transaction.
      await timed('publish', () =>
        postgres
          ? ex.messagePublishMany({ messages, events })
          : ex.transaction((tx) => tx.messagePublishMany({ messages, events })),
      );
      const at = Math.floor(now);
      const { messages: claimed } = await timed('claim', () =>
        ex.messageClaimDueLimited({
          now: at,
          limit: BATCH,
          leaseUntil: at + 30_000,
          maxInFlightByPlan: MAX_IN_FLIGHT_BY_PLAN,
          originRooms: [],
        }),
      );
      const finished = claimed.map((m) => ({
        lease: { id: m.id, leaseToken: m.leaseToken },
        events: [
          build.eventOf(m, 'DELIVERED', at, {
            activeAt: at - 1,
            responseStatus: 200,
            responseHeader: { 'Content-Type': ['text/plain'] },
            responseBody: Buffer.from('ok'),
          }),
        ],
      }));
      await timed('finish', () => ex.messageFinishMany({ events: [], finished }));
    }
    const per = (micros: number): number => micros / n;
    const run: StorageRun = {
      publish: per(cpu.publish),
      claim: per(cpu.claim),
      finish: per(cpu.finish),
      total: per(cpu.publish + cpu.claim + cpu.finish),
    };
    if (postgres) {
      run.server = ((postgresServerCpuSeconds() - serverStart) / n) * 1e6;
      // No split where the server's processes cannot be seen (no /proc, or a remote server).
      if (pids.length > 0) {
        run.serverPublish = server.publish / 1000 / n;
        run.serverClaim = server.claim / 1000 / n;
        run.serverFinish = server.finish / 1000 / n;
      }
    }
    return run;
  } finally {
    await driver.close();
    rmSync(dir, { recursive: true, force: true });
    if (storage === 'postgres') {
      await withSql((sql) => sql.unsafe(`DROP SCHEMA IF EXISTS ${schema} CASCADE`));
    }
  }
}

/**
 * `publish 18.1, claim 2.6, finish 17.3: 38.0 µs per message`, and on PostgreSQL the server's
 * (`PostgreSQL server 102.0 µs (publish 26.6, claim 27.0, finish 20.2)`).
 */
export function describeStorageRun(run: StorageRun): string {
  const f = (x: number): string => x.toFixed(1);
  const steps =
    run.serverPublish === undefined
      ? ''
      : ` (publish ${f(run.serverPublish)}, claim ${f(run.serverClaim ?? NaN)}, finish ${f(run.serverFinish ?? NaN)})`;
  const server = run.server === undefined ? '' : `; PostgreSQL server ${f(run.server)} µs${steps}`;
  return `publish ${f(run.publish)}, claim ${f(run.claim)}, finish ${f(run.finish)}: ${f(run.total)} µs per message${server}`;
}
