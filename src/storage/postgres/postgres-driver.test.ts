/**
 * The PostgreSQL driver: the shared conformance suite, plus what only a shared database can show
 * (several pools or nodes on one schema). Needs `TEST_DATABASE_URL`; each driver gets a fresh
 * schema, dropped afterwards.
 */
import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ClaimedMessage, Message } from '../../core/types.js';
import {
  BINARY_BODY,
  T0,
  clearMessages,
  leaseOf,
  makeAccount,
  makeDlqEntry,
  makeEvent,
  makeFullMessage,
  makeMessage,
  plain,
} from '../conformance/fixtures.js';
import { runDriverConformance } from '../conformance/suite.js';
import { listMigrationFiles } from '../migrate-files.js';
import type { Driver, Executor, MessageClaimDueLimitedResult } from '../driver.js';
import { INLINE_BYTES, chunkByBytes } from './postgres-batch.js';
import { CLAIM_LOCK_CLASS } from './postgres-messages.js';
import { WARM_CONNECTIONS, WARM_FIXED_CONNECTIONS, openPostgresDriver } from './postgres-driver.js';
import { quoteIdentifier } from './postgres-migrate.js';
import { wakeChannelOf } from './postgres-wake.js';

const url = process.env.TEST_DATABASE_URL;
if (!url) {
  console.log('postgres-driver.test.ts: TEST_DATABASE_URL is not set; PostgreSQL tests skipped');
}

const newSchemaName = (): string => `ferry_test_${randomBytes(6).toString('hex')}`;

/** Drops a test schema (and everything in it) through a connection of its own. */
async function dropSchema(schema: string): Promise<void> {
  const admin = postgres(url ?? '', { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(`DROP SCHEMA IF EXISTS ${quoteIdentifier(schema)} CASCADE`);
  } finally {
    await admin.end({ timeout: 5 });
  }
}

const schemaOf = new Map<Driver, string>();

if (url) {
  runDriverConformance(
    'postgres',
    () => {
      const schema = newSchemaName();
      const driver = openPostgresDriver({ url, schema });
      schemaOf.set(driver, schema);
      return Promise.resolve(driver);
    },
    async (driver) => {
      await driver.close();
      const schema = schemaOf.get(driver);
      if (schema) await dropSchema(schema);
    },
  );
} else {
  describe.skip('driver conformance: postgres', () => {
    it.skip('needs TEST_DATABASE_URL (a PostgreSQL 13+ database)', () => {});
  });
}

describe.skipIf(!url)('postgres driver: connections opened before they are needed', () => {
  it('opens a few connections of each pool at a server start, not before', async () => {
    // A name of this driver's own, to find its connections among everyone else's.
    const name = `ferry_open_${randomBytes(4).toString('hex')}`;
    const named = new URL(url ?? '');
    named.searchParams.set('application_name', name);
    const schema = newSchemaName();
    const driver = openPostgresDriver({ url: named.href, schema });
    const admin = postgres(url ?? '', { max: 1, onnotice: () => {} });
    const open = async (): Promise<number> => {
      const [row] = await admin<{ n: number }[]>`
        SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = ${name}`;
      return row?.n ?? 0;
    };
    try {
      await driver.migrate();
      const afterMigrate = await open();
      await driver.openConnections?.();
      expect(afterMigrate).toBeLessThan(WARM_CONNECTIONS + WARM_FIXED_CONNECTIONS);
      expect(await open()).toBeGreaterThanOrEqual(WARM_CONNECTIONS + WARM_FIXED_CONNECTIONS);
    } finally {
      await driver.close();
      await admin.end({ timeout: 5 });
      await dropSchema(schema);
    }
  });
});

describe.skipIf(!url)('postgres driver on a shared schema', () => {
  const schema = newSchemaName();
  let a: Driver;
  let b: Driver;

  beforeAll(async () => {
    a = openPostgresDriver({ url: url ?? '', schema, max: 4 });
    b = openPostgresDriver({ url: url ?? '', schema, max: 4 });
    await a.migrate();
    await b.migrate();
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await dropSchema(schema);
  });

  /**
   * Runs `fn` with a one-connection driver on this schema that records the text of every
   * statement it sends from the call of `fn` on (its migration, a no-op here, comes first:
   * every node migrates before anything else).
   */
  async function traced(fn: (driver: Driver, sent: string[]) => Promise<void>): Promise<void> {
    const sent: string[] = [];
    const driver = openPostgresDriver({
      url: url ?? '',
      schema,
      max: 1,
      // Not the package's own lookup of array types, once per new connection (the engine's
      // statements have a pool of their own, which connects at its first statement).
      trace: (t) => void (/pg_catalog\.pg_type/.test(t) || sent.push(t)),
    });
    try {
      await driver.migrate();
      sent.length = 0;
      await fn(driver, sent);
    } finally {
      await driver.close();
    }
  }

  it('hands each of 200 messages to exactly one of two claimers taking batches of 10', async () => {
    await clearMessages(a.executor);
    const account = makeAccount();
    const messages = Array.from({ length: 200 }, (_, i) =>
      makeMessage(account.id, { dueAt: T0 + (i % 7) }),
    );
    await a.executor.messageInsertMany({ messages });

    const claimLoop = async (driver: Driver): Promise<ClaimedMessage[]> => {
      const got: ClaimedMessage[] = [];
      for (;;) {
        const batch = await driver.executor.messageClaimDue({
          now: T0 + 10,
          limit: 10,
          leaseUntil: T0 + 60_000,
        });
        if (batch.length === 0) return got;
        got.push(...batch);
      }
    };
    const [fromA, fromB] = await Promise.all([claimLoop(a), claimLoop(b)]);
    const ids = [...fromA, ...fromB].map((m) => m.id);
    expect(ids).toHaveLength(200);
    expect(new Set(ids).size).toBe(200);
    expect(new Set(ids)).toEqual(new Set(messages.map((m) => m.id)));
    expect(fromA.length).toBeGreaterThan(0);
    expect(fromB.length).toBeGreaterThan(0);
    const tokens = [...fromA, ...fromB].map((m) => m.leaseToken);
    expect(new Set(tokens).size).toBe(200);
  });

  it('never gives one row to two claims running at the same time on different pools', async () => {
    await clearMessages(a.executor);
    const account = makeAccount();
    const messages = Array.from({ length: 100 }, () => makeMessage(account.id));
    await a.executor.messageInsertMany({ messages });
    const claim = (driver: Driver): Promise<ClaimedMessage[]> =>
      driver.executor.messageClaimDue({ now: T0, limit: 100, leaseUntil: T0 + 1_000 });
    const results = await Promise.all([claim(a), claim(b), claim(a), claim(b)]);
    const ids = results.flat().map((m) => m.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toHaveLength(100);
  });

  it('skips rows another transaction holds instead of waiting for it', async () => {
    await clearMessages(a.executor);
    const account = makeAccount();
    const messages = Array.from({ length: 4 }, (_, i) =>
      makeMessage(account.id, { dueAt: T0 + i }),
    );
    await a.executor.messageInsertMany({ messages });
    await a.executor.transaction(async (tx) => {
      const first = await tx.messageClaimDue({ now: T0 + 10, limit: 2, leaseUntil: T0 + 100 });
      // Still uncommitted: another node must neither block on these rows nor claim them.
      const second = await b.executor.messageClaimDue({
        now: T0 + 10,
        limit: 10,
        leaseUntil: T0 + 100,
      });
      expect(first.map((m) => m.id)).toEqual([messages[0]?.id, messages[1]?.id]);
      expect(second.map((m) => m.id)).toEqual([messages[2]?.id, messages[3]?.id]);
    });
  });

  it('renews leases without waiting for a row another transaction holds (no deadlock with outcomes)', async () => {
    await clearMessages(a.executor);
    const account = makeAccount();
    const messages = Array.from({ length: 3 }, (_, i) =>
      makeMessage(account.id, { dueAt: T0 + i }),
    );
    await a.executor.messageInsertMany({ messages });
    const claimed = await a.executor.messageClaimDue({
      now: T0 + 10,
      limit: 3,
      leaseUntil: T0 + 100,
    });
    const leases = claimed.map(leaseOf);
    await b.executor.transaction(async (tx) => {
      // An outcome being written for the first message, still uncommitted.
      expect(await tx.messageDeleteLeasedMany({ leases: leases.slice(0, 1) })).toEqual([
        messages[0]?.id,
      ]);
      // The heartbeat on another connection neither waits for it nor renews it.
      const renewed = await a.executor.messageLeaseExtendMany({ leases, leaseUntil: T0 + 500 });
      expect(renewed).toEqual([messages[1]?.id, messages[2]?.id]);
    });
    expect(await a.executor.messageLeaseExtendMany({ leases, leaseUntil: T0 + 600 })).toEqual([
      messages[1]?.id,
      messages[2]?.id,
    ]);
  });

  it('gives a fresh token on every claim, so the previous holder is fenced off', async () => {
    await clearMessages(a.executor);
    const account = makeAccount();
    const message = makeMessage(account.id);
    await a.executor.messageInsertMany({ messages: [message] });
    const [first] = await a.executor.messageClaimDue({ now: T0, limit: 1, leaseUntil: T0 + 10 });
    // The lease expired (due_at passed), so another node reclaims the message.
    const [second] = await b.executor.messageClaimDue({
      now: T0 + 10,
      limit: 1,
      leaseUntil: T0 + 20,
    });
    if (!first || !second) throw new Error('expected both claims to get the message');
    expect(second.leaseToken).not.toBe(first.leaseToken);
    expect(await a.executor.messageDeleteLeasedMany({ leases: [leaseOf(first)] })).toEqual([]);
    expect(await b.executor.messageDeleteLeasedMany({ leases: [leaseOf(second)] })).toEqual([
      message.id,
    ]);
  });

  it('never leases more than an account’s max_global_parallelism to claims on two pools', async () => {
    await clearMessages(a.executor);
    const account = makeAccount({ plan: 'free' });
    await a.executor.accountInsert({ account });
    const messages = Array.from({ length: 40 }, (_, i) =>
      makeMessage(account.id, { dueAt: T0 + i }),
    );
    await a.executor.messageInsertMany({ messages });
    const now = T0 + 100;
    const claim = (driver: Driver) =>
      driver.executor.messageClaimDueLimited({
        now,
        limit: 10,
        leaseUntil: now + 60_000,
        maxInFlightByPlan: { free: 4 },
      });
    const held: ClaimedMessage[] = [];
    // Rounds of eight claims at once, four on each pool (one per connection); between rounds
    // two deliveries end. Each round the account is back at its limit, never above it.
    for (let round = 0; round < 5; round++) {
      const results = await Promise.all([a, b, a, b, a, b, a, b].map(claim));
      held.push(...results.flatMap((r) => r.messages));
      expect(held).toHaveLength(4);
      expect(results.every((r) => r.atLimit.includes(account.id))).toBe(true);
      expect(await b.executor.messageCountInFlight({ accountId: account.id, now })).toBe(4);
      const ended = held.splice(0, 2);
      await b.executor.messageDeleteLeasedMany({ leases: ended.map(leaseOf) });
    }
  });

  it('claims under a limit in one statement at the root, holding the claim lock to its end', async () => {
    await clearMessages(a.executor);
    const account = makeAccount({ plan: 'free' });
    await a.executor.accountInsert({ account });
    await a.executor.messageInsertMany({ messages: [makeMessage(account.id, { dueAt: T0 })] });
    await traced(async (driver, sent) => {
      const claimed = await driver.executor.messageClaimDueLimited({
        now: T0 + 1,
        limit: 10,
        leaseUntil: T0 + 60_000,
        maxInFlightByPlan: { free: 4 },
      });
      expect(claimed.messages).toHaveLength(1);
      expect(sent).toHaveLength(1);
      expect(sent[0]).toContain('ferry_leased_count_locked');
      expect(sent[0]).toContain("set_config('synchronous_commit', 'off', true)");
    });
  });

  /**
   * Returns once another session waits for the claim lock that `tx` holds (its backend blocked on
   * the advisory lock of this schema: other test files' schemas have claim locks of their own),
   * checking meanwhile that `settled()`, the waiter's answer, has not come.
   */
  async function untilClaimLockWaiter(tx: postgres.TransactionSql, settled: () => boolean) {
    for (;;) {
      const [row] = await tx<{ n: number }[]>`
        SELECT count(*)::int AS n FROM pg_locks
        WHERE locktype = 'advisory' AND NOT granted AND classid = ${CLAIM_LOCK_CLASS}
          AND objid::bigint = hashtext(current_schema())::bigint & 4294967295`;
      if ((row?.n ?? 0) > 0) return;
      expect(settled()).toBe(false);
    }
  }

  /**
   * A message of a new `free` account, given leased as Engine.reserve gives it; the messages
   * table emptied first unless `keep`.
   */
  async function leasedMessage(keep = false): Promise<ClaimedMessage> {
    if (!keep) await clearMessages(a.executor);
    const account = makeAccount({ plan: 'free' });
    await a.executor.accountInsert({ account });
    return {
      ...makeMessage(account.id, { dueAt: T0, createdAt: T0 }),
      dueAt: T0 + 60_000,
      leaseToken: randomBytes(12).toString('base64url'),
    };
  }

  /** Runs `fn` in a transaction of another session that holds the claim lock. */
  async function withClaimLockHeld(fn: (tx: postgres.TransactionSql) => Promise<void>) {
    const other = postgres(url ?? '', {
      max: 1,
      onnotice: () => {},
      connection: { search_path: quoteIdentifier(schema) },
    });
    try {
      await other.begin(async (tx) => {
        await tx`SELECT pg_advisory_xact_lock(${CLAIM_LOCK_CLASS}, hashtext(current_schema()))`;
        await fn(tx);
      });
    } finally {
      await other.end({ timeout: 5 });
    }
  }

  it('waits for the claim lock as a node of the previous version takes it (a rolling upgrade)', async () => {
    await clearMessages(a.executor);
    const account = makeAccount({ plan: 'free' });
    await a.executor.accountInsert({ account });
    await a.executor.messageInsertMany({ messages: [makeMessage(account.id, { dueAt: T0 })] });
    const old = postgres(url ?? '', {
      max: 1,
      onnotice: () => {},
      connection: { search_path: quoteIdentifier(schema) },
    });
    try {
      let claimed: Promise<MessageClaimDueLimitedResult> | undefined;
      let settled = false;
      await old.begin(async (tx) => {
        // The claim's lock as nodes before migration 012 take it: a statement of its own.
        await tx`SELECT pg_advisory_xact_lock(${CLAIM_LOCK_CLASS}, hashtext(current_schema()))`;
        claimed = b.executor.messageClaimDueLimited({
          now: T0 + 1,
          limit: 10,
          leaseUntil: T0 + 60_000,
          maxInFlightByPlan: { free: 4 },
        });
        void claimed.then(() => (settled = true));
        await untilClaimLockWaiter(tx, () => settled);
        expect(settled).toBe(false);
      });
      expect((await claimed)?.messages).toHaveLength(1);
    } finally {
      await old.end({ timeout: 5 });
    }
  });

  it('a publish keeps its leases only within max_global_parallelism, every node counted', async () => {
    await clearMessages(a.executor);
    const account = makeAccount({ plan: 'free' });
    await a.executor.accountInsert({ account });
    const leased = (dueAt: number): ClaimedMessage => ({
      ...makeMessage(account.id, { dueAt: T0, createdAt: T0 }),
      dueAt,
      leaseToken: randomBytes(12).toString('base64url'),
    });
    // One delivery in flight on another node: one of the limit of 3 is taken.
    await b.executor.messageInsertMany({ messages: [leased(T0 + 60_000)] });
    const published = [leased(T0 + 60_000), leased(T0 + 60_000), leased(T0 + 60_000)];
    const kept = await a.executor.messagePublishMany({
      messages: published,
      events: published.map((m) => makeEvent(m)),
      leaseLimits: { now: T0 + 1, maxInFlightByPlan: { free: 3 } },
    });
    expect(kept).toEqual([published[0]?.id, published[1]?.id]);
    // The third is stored due from its creation, for a claim to take.
    const claimed = await b.executor.messageClaimDue({
      now: T0 + 1,
      limit: 10,
      leaseUntil: T0 + 60_000,
    });
    expect(claimed.map((m) => m.id)).toEqual([published[2]?.id]);
  });

  it('a publish stores its messages unleased rather than wait long for a busy claim lock', async () => {
    const message = await leasedMessage();
    await withClaimLockHeld(async () => {
      // Held past the publish's wait (DEFAULT_PUBLISH_LOCK_WAIT_MS): this transaction ends only
      // after the publish has answered.
      const kept = await a.executor.messagePublishMany({
        messages: [message],
        events: [makeEvent(message)],
        leaseLimits: { now: T0 + 1, maxInFlightByPlan: { free: 3 } },
      });
      expect(kept).toEqual([]);
    });
    const claimed = await b.executor.messageClaimDue({
      now: T0 + 1,
      limit: 10,
      leaseUntil: T0 + 60_000,
    });
    expect(claimed.map((m) => m.id)).toEqual([message.id]);
  });

  it('a publish of several accounts gives up the busy claim lock once, not once per account', async () => {
    const first = await leasedMessage();
    const second = await leasedMessage(true);
    // A wait long enough to tell one from two on a loaded machine.
    const c = openPostgresDriver({ url: url ?? '', schema, max: 1, publishLockWaitMs: 1_000 });
    try {
      await withClaimLockHeld(async () => {
        const started = performance.now();
        const kept = await c.executor.messagePublishMany({
          messages: [first, second],
          events: [makeEvent(first), makeEvent(second)],
          leaseLimits: { now: T0 + 1, maxInFlightByPlan: { free: 3 } },
        });
        const waited = performance.now() - started;
        expect(kept).toEqual([]);
        expect(waited).toBeGreaterThanOrEqual(1_000);
        expect(waited).toBeLessThan(1_900);
      });
    } finally {
      await c.close();
    }
  });

  it('a publish waits for a claim lock held briefly, then keeps its lease', async () => {
    const message = await leasedMessage();
    // The wait made long enough to watch: the default is a few ms, as long as a publish holds it.
    const c = openPostgresDriver({ url: url ?? '', schema, max: 1, publishLockWaitMs: 60_000 });
    try {
      let kept: Promise<string[]> | undefined;
      let settled = false;
      await withClaimLockHeld(async (tx) => {
        kept = c.executor.messagePublishMany({
          messages: [message],
          events: [makeEvent(message)],
          leaseLimits: { now: T0 + 1, maxInFlightByPlan: { free: 3 } },
        });
        void kept.then(() => (settled = true));
        await untilClaimLockWaiter(tx, () => settled);
        expect(settled).toBe(false);
      });
      expect(await kept).toEqual([message.id]);
    } finally {
      await c.close();
    }
    // Stored leased, due at its lease's end: no claim takes it.
    const stored = await a.executor.messageGet({ accountId: message.accountId, id: message.id });
    expect(stored?.dueAt).toBe(T0 + 60_000);
  });

  it('a limited claim waits for a concurrent one to commit, then counts its leases', async () => {
    await clearMessages(a.executor);
    const account = makeAccount({ plan: 'free' });
    await a.executor.accountInsert({ account });
    const later = [T0 + 20, T0 + 30].map((dueAt) => makeMessage(account.id, { dueAt }));
    // Published meanwhile with a due time in the past (Svc-Not-Before): first in due order.
    const earlier = [T0 + 1, T0 + 2].map((dueAt) => makeMessage(account.id, { dueAt }));
    await a.executor.messageInsertMany({ messages: later });
    const claim = (executor: Executor) =>
      executor.messageClaimDueLimited({
        now: T0 + 100,
        limit: 10,
        leaseUntil: T0 + 60_000,
        maxInFlightByPlan: { free: 2 },
      });
    const admin = postgres(url ?? '', { max: 1, onnotice: () => {} });
    let done = false;
    /** Resolves once a limited claim on this schema waits for the claim lock. */
    const claimWaiting = async (): Promise<'waiting' | 'done'> => {
      while (!done) {
        const rows = await admin`
          SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
            AND classid = ${CLAIM_LOCK_CLASS} AND objid = hashtext(${schema})::oid`;
        if (rows.length > 0) return 'waiting';
      }
      return 'done';
    };
    try {
      let second: Promise<MessageClaimDueLimitedResult> | undefined;
      const first = await a.executor.transaction(async (tx) => {
        const taken = await claim(tx);
        await b.executor.messageInsertMany({ messages: earlier });
        second = claim(b.executor);
        // Running now, it would count no lease (this one is not committed) and take both
        // earlier messages: four in flight for a limit of two. It must wait instead.
        const race = await Promise.race([second.then(() => 'claimed'), claimWaiting()]);
        expect(race).toBe('waiting');
        return taken;
      });
      expect(first.messages.map((m) => m.id)).toEqual(later.map((m) => m.id));
      expect(await second).toMatchObject({
        messages: [],
        atLimit: [account.id],
        gatesReady: false,
      });
    } finally {
      done = true;
      await admin.end({ timeout: 5 });
    }
  });

  it('a keyed publish that changes nothing on its gate still waits for a concurrent one', async () => {
    await clearMessages(a.executor);
    const account = makeAccount();
    await a.executor.accountInsert({ account });
    const keyed = () =>
      makeMessage(account.id, {
        spec: { method: 'POST', headers: {}, flowControl: { key: 'k', parallelism: 1 } },
      });
    // Creates the gate; cancelling the message frees its one slot.
    const [first, second, third] = [keyed(), keyed(), keyed()];
    if (!first || !second || !third) throw new Error('unreachable');
    await a.executor.messageInsertMany({ messages: [first] });
    await a.executor.messageDeleteMany({ accountId: account.id, filter: {} });
    const admin = postgres(url ?? '', { max: 1, onnotice: () => {} });
    try {
      let racing: Promise<void> | undefined;
      await a.executor.transaction(async (tx) => {
        // Same limits, slot free: the upsert writes nothing, and the message starts at once.
        await tx.messageInsertMany({ messages: [second] });
        // This transaction's backend: the one holding a lock on this schema's gates.
        const [holder] = await admin<{ pid: number }[]>`
          SELECT pid FROM pg_stat_activity
          WHERE state = 'idle in transaction' AND query LIKE '%INSERT INTO messages%'
            AND pid IN (SELECT pid FROM pg_locks WHERE relation = ${`${schema}.flow_gates`}::regclass)`;
        expect(holder).toBeDefined();
        racing = b.executor.messageInsertMany({ messages: [third] });
        // Running now, it would count no holder (this one is not committed) and start too: two
        // in flight for a parallelism of 1. It must wait for this transaction's row lock.
        let published = false;
        const blocked = async (): Promise<'waiting' | 'published'> => {
          while (!published) {
            const rows = await admin`
              SELECT 1 FROM pg_stat_activity WHERE ${holder?.pid ?? 0}::int = ANY(pg_blocking_pids(pid))`;
            if (rows.length > 0) return 'waiting';
          }
          return 'published';
        };
        const race = await Promise.race([
          racing.then(() => {
            published = true;
            return 'published' as const;
          }),
          blocked(),
        ]);
        expect(race).toBe('waiting');
      });
      await racing;
      const gate = await b.executor.flowGateGet({ accountId: account.id, kind: 'key', name: 'k' });
      expect(gate).toMatchObject({ parallelismCount: 1, waitListSize: 1 });
    } finally {
      await admin.end({ timeout: 5 });
    }
  });

  it('creates an account’s last allowed queue once when two pools race for it', async () => {
    const account = makeAccount();
    const upsert = (driver: Driver, name: string) =>
      driver.executor.queueUpsert({ accountId: account.id, name, now: T0, maxQueues: 3 });
    expect(await upsert(a, 'q1')).toBe('created');
    expect(await upsert(b, 'q2')).toBe('created');
    const names = Array.from({ length: 8 }, (_, i) => `q-new-${i}`);
    const results = await Promise.all(names.map((name, i) => upsert(i % 2 ? a : b, name)));
    expect(results.filter((r) => r === 'created')).toHaveLength(1);
    expect(results.filter((r) => r === 'limit')).toHaveLength(7);
    const queues = await b.executor.flowGateList({ accountId: account.id, kind: 'queue' });
    expect(queues).toHaveLength(3);
  });

  it('delivers a wake-up from one driver to a listener on another', async () => {
    let calls = 0;
    let resolveWoken: () => void = () => {};
    const woken = new Promise<void>((resolve) => (resolveWoken = resolve));
    const unsubscribeFirst = await b.listenWake(() => calls++);
    const unsubscribeSecond = await b.listenWake(() => resolveWoken());
    await unsubscribeFirst();
    await a.notifyWake();
    await woken;
    // Listeners of one channel are called together, so the first would have run by now.
    expect(calls).toBe(0);
    await unsubscribeSecond();
    await unsubscribeSecond(); // idempotent
  });

  it('migrates safely when several nodes start at once, and only once', async () => {
    const fresh = newSchemaName();
    const drivers = Array.from({ length: 4 }, () =>
      openPostgresDriver({ url: url ?? '', schema: fresh, max: 2 }),
    );
    try {
      await Promise.all(drivers.map((d) => d.migrate()));
      await drivers[0]?.migrate();
      const check = postgres(url ?? '', { max: 1, onnotice: () => {} });
      try {
        const rows = await check.unsafe<{ version: number; name: string }[]>(
          `SELECT version, name FROM ${quoteIdentifier(fresh)}.ferry_migrations ORDER BY version`,
        );
        // Each migration file exactly once, whatever files later issues add.
        const files = listMigrationFiles(new URL('./migrations/', import.meta.url));
        expect(files[0]).toMatchObject({ version: 1, name: 'init' });
        expect(rows.map((r) => ({ ...r }))).toEqual(
          files.map(({ version, name }) => ({ version, name })),
        );
      } finally {
        await check.end({ timeout: 5 });
      }
    } finally {
      await Promise.all(drivers.map((d) => d.close()));
      await dropSchema(fresh);
    }
  });

  it('refuses a schema migrated by a newer Ferry, and changes nothing in it', async () => {
    const fresh = newSchemaName();
    const driver = openPostgresDriver({ url: url ?? '', schema: fresh, max: 2 });
    const check = postgres(url ?? '', { max: 1, onnotice: () => {} });
    try {
      await driver.migrate();
      await check.unsafe(
        `INSERT INTO ${quoteIdentifier(fresh)}.ferry_migrations (version, name, applied_at)
         VALUES (999, 'future', 0)`,
      );
      const files = listMigrationFiles(new URL('./migrations/', import.meta.url));
      const newest = files.at(-1);
      await expect(driver.migrate()).rejects.toThrow(
        `the database has schema version 999, newer than this Ferry's ${newest?.version}; ` +
          'upgrade Ferry or use another schema (--database-schema)',
      );
      const [row] = await check.unsafe<{ n: string }[]>(
        `SELECT count(*) AS n FROM ${quoteIdentifier(fresh)}.ferry_migrations`,
      );
      expect(Number(row?.n)).toBe(files.length + 1);
    } finally {
      await check.end({ timeout: 5 });
      await driver.close();
      await dropSchema(fresh);
    }
  });

  it('round-trips every byte value through messages, events and the DLQ', async () => {
    const account = makeAccount();
    const allBytes = Uint8Array.from({ length: 256 }, (_, i) => i);
    const message = makeFullMessage(account.id, { body: allBytes });
    const empty = makeMessage(account.id, { body: new Uint8Array(0) });
    await a.executor.messageInsertMany({ messages: [message, empty] });
    expect(plain(await b.executor.messageGet({ accountId: account.id, id: message.id }))).toEqual(
      plain(message),
    );
    const gotEmpty = await b.executor.messageGet({ accountId: account.id, id: empty.id });
    expect(gotEmpty?.body.byteLength).toBe(0);

    await a.executor.eventInsertMany({
      events: [
        makeEvent(message),
        makeEvent(message, { state: 'ERROR', time: T0 + 1, responseBody: BINARY_BODY }),
      ],
    });
    const page = await b.executor.eventList({
      accountId: account.id,
      filter: { messageIds: [message.id] },
      count: 10,
    });
    expect(page.items.map((e) => e.state)).toEqual(['ERROR', 'CREATED']);
    for (const event of page.items) expect(plain(event.body)).toEqual(allBytes);
    expect(plain(page.items[0]?.responseBody)).toEqual(BINARY_BODY);

    const entry = makeDlqEntry(message, { responseBody: allBytes });
    await a.executor.dlqInsertMany({ entries: [entry] });
    const got = await b.executor.dlqGet({ accountId: account.id, dlqId: entry.dlqId });
    expect(plain(got)).toEqual(plain(entry));
  });

  it('round-trips bodies on both sides of INLINE_BYTES in one batch: publish, outcome, DLQ', async () => {
    await clearMessages(a.executor);
    const account = makeAccount();
    // Every byte value, repeated to each length: in the JSON up to INLINE_BYTES, after it in the
    // column's parameter, several long ones at different offsets of it.
    const bytes = (length: number) => Uint8Array.from({ length }, (_, i) => (i * 7 + length) % 256);
    const sizes = [0, 1, INLINE_BYTES, INLINE_BYTES + 1, 3_000, 4_096, 700, 255];
    const messages = sizes.map((size) =>
      makeMessage(account.id, { body: bytes(size), dueAt: T0, createdAt: T0 }),
    );
    const leased = { ...makeMessage(account.id, { body: bytes(2_000) }), leaseToken: 'tok' };
    await a.executor.messagePublishMany({
      messages: [...messages, leased],
      events: [...messages, leased].map((m) => makeEvent(m)),
      leaseLimits: { now: T0, maxInFlightByPlan: {} },
    });
    await a.executor.messagePublishMany({
      messages: [makeMessage(account.id, { body: bytes(900) })],
      events: [],
    });
    for (const m of [...messages, leased]) {
      const got = await b.executor.messageGet({ accountId: account.id, id: m.id });
      expect(plain(got?.body), `message body of ${m.body.byteLength} bytes`).toEqual(plain(m.body));
    }
    const claimed = await b.executor.messageClaimDue({ now: T0, limit: 20, leaseUntil: T0 + 1 });
    const bySize = new Map(claimed.map((m) => [m.body.byteLength, m]));
    for (const size of sizes) expect(plain(bySize.get(size)?.body)).toEqual(plain(bytes(size)));
    // The outcome statement: DELIVERED events with response bodies of both kinds.
    expect(
      (
        await a.executor.messageFinishMany({
          events: [],
          finished: claimed.map((m, i) => ({
            lease: leaseOf(m),
            events: [makeEvent(m, { state: 'DELIVERED', responseBody: bytes(i * 250) })],
          })),
        })
      ).sort(),
    ).toEqual(claimed.map((m) => m.id).sort());
    const page = await b.executor.eventList({ accountId: account.id, filter: {}, count: 100 });
    for (const event of page.items) {
      const message = [...messages, leased].find((m) => m.id === event.messageId);
      if (message) expect(plain(event.body)).toEqual(plain(message.body));
      if (event.state === 'DELIVERED') {
        const i = claimed.findIndex((m) => m.id === event.messageId);
        expect(plain(event.responseBody)).toEqual(plain(bytes(i * 250)));
      }
    }
    expect(page.items.filter((e) => e.state === 'DELIVERED')).toHaveLength(claimed.length);
    const entries = sizes.map((size, i) =>
      makeDlqEntry(messages[i] as Message, { responseBody: bytes(size + 100) }),
    );
    await a.executor.dlqInsertMany({ entries });
    for (const entry of entries) {
      const got = await b.executor.dlqGet({ accountId: account.id, dlqId: entry.dlqId });
      expect(plain(got)).toEqual(plain(entry));
    }
  });

  it('compresses bodies with lz4 (PostgreSQL 14 and later) and reads them back whole', async () => {
    const admin = postgres(url ?? '', { max: 1, onnotice: () => {} });
    try {
      const [server] = await admin<{ version: number }[]>`
        SELECT current_setting('server_version_num')::int AS version`;
      // A body that TOAST compresses: over 2 KiB in its row, and JSON-like text that packs well.
      const text = (n: number): Uint8Array =>
        new TextEncoder().encode(JSON.stringify({ items: Array(n).fill({ sku: 'a1', qty: 2 }) }));
      const account = makeAccount();
      const inline = makeMessage(account.id, { body: text(150) }); // about 3 KiB: in its row
      const shared = makeMessage(account.id, { body: text(500) }); // about 10 KiB: in `bodies`
      await a.executor.messageInsertMany({ messages: [inline, shared] });
      await a.executor.eventInsertMany({ events: [makeEvent(inline)] });
      for (const message of [inline, shared]) {
        const got = await b.executor.messageGet({ accountId: account.id, id: message.id });
        expect(plain(got?.body)).toEqual(plain(message.body));
      }
      const s = quoteIdentifier(schema);
      const methods = await admin.unsafe<{ method: string | null }[]>(
        `SELECT pg_column_compression(body) AS method FROM ${s}.messages WHERE id = $1
         UNION ALL SELECT pg_column_compression(body) FROM ${s}.events WHERE message_id = $1
         UNION ALL SELECT pg_column_compression(b.head) FROM ${s}.bodies b
           JOIN ${s}.messages m ON m.body_id = b.id WHERE m.id = $2`,
        [inline.id, shared.id],
      );
      // pg_column_compression is PostgreSQL 14's too; on 13 everything stays pglz.
      if ((server?.version ?? 0) >= 140000) {
        expect(methods.map((m) => m.method)).toEqual(['lz4', 'lz4', 'lz4']);
      }
    } finally {
      await admin.end({ timeout: 5 });
    }
  });

  it('returns ms times beyond 2^31 as numbers, not strings', async () => {
    const account = makeAccount({ createdAt: 8_000_000_000_000 });
    await a.executor.accountInsert({ account });
    const got = await b.executor.accountGet({ id: account.id });
    expect(got?.createdAt).toBe(8_000_000_000_000);
    const message = makeMessage(account.id, { createdAt: T0, dueAt: 8_000_000_000_000 });
    await a.executor.messageInsertMany({ messages: [message] });
    const fetched = await a.executor.messageGet({ accountId: account.id, id: message.id });
    expect(fetched?.dueAt).toBe(8_000_000_000_000);
    expect(typeof fetched?.notBefore).toBe('number');
  });

  it('inserts a large batch in one call, events keeping input order in their ids', async () => {
    const account = makeAccount();
    const messages = Array.from({ length: 3_000 }, () => makeMessage(account.id));
    await a.executor.messageInsertMany({ messages });
    const events = messages.map((m, i) => makeEvent(m, { time: T0 + i }));
    await a.executor.eventInsertMany({ events });
    const page = await a.executor.eventList({ accountId: account.id, filter: {}, count: 3_000 });
    expect(page.cursor).toBeUndefined();
    // Newest first: ids descend exactly as the input's position does.
    expect(page.items.map((e) => e.messageId)).toEqual(messages.map((m) => m.id).reverse());
    await clearMessages(a.executor);
  });

  it('undoes only a nested transaction that throws, inside an outer one that commits', async () => {
    const account = makeAccount();
    const kept = makeMessage(account.id);
    const undone = makeMessage(account.id);
    await a.executor.transaction(async (tx) => {
      await tx.messageInsertMany({ messages: [kept] });
      await expect(
        tx.transaction(async (inner) => {
          await inner.messageInsertMany({ messages: [undone] });
          throw new Error('boom');
        }),
      ).rejects.toThrow('boom');
    });
    expect(await b.executor.messageGet({ accountId: account.id, id: kept.id })).toBeDefined();
    expect(await b.executor.messageGet({ accountId: account.id, id: undone.id })).toBeUndefined();
  });

  it('stores plain published messages and their events in one statement, without BEGIN', async () => {
    await traced(async (driver, sent) => {
      const account = makeAccount();
      const messages = [makeMessage(account.id), makeMessage(account.id)];
      await driver.executor.messagePublishMany({
        messages,
        events: messages.map((m) => makeEvent(m)),
      });
      expect(sent.map((t) => t.trim().split(/\s+/).slice(0, 4).join(' '))).toEqual([
        'WITH first AS (INSERT',
      ]);
      const stored = await b.executor.eventList({ accountId: account.id, filter: {}, count: 10 });
      expect(stored.items.map((e) => e.messageId).sort()).toEqual(messages.map((m) => m.id).sort());
    });
  });

  it('writes a plain outcome batch in one statement, not waiting for the WAL flush at the root', async () => {
    await clearMessages(a.executor);
    const account = makeAccount();
    const messages = [makeMessage(account.id, { dueAt: 0 }), makeMessage(account.id, { dueAt: 0 })];
    await a.executor.messageInsertMany({ messages });
    const [first, second] = await a.executor.messageClaimDue({ now: 1, limit: 10, leaseUntil: 2 });
    if (!first || !second) throw new Error('nothing claimed');
    const finish = (m: ClaimedMessage) => ({
      events: [makeEvent(m, { state: 'ACTIVE' })],
      finished: [{ lease: leaseOf(m), events: [makeEvent(m, { state: 'DELIVERED' })] }],
    });
    await traced(async (driver, sent) => {
      expect(await driver.executor.messageFinishMany(finish(first))).toEqual([first.id]);
      expect(sent).toHaveLength(1);
      expect(sent[0]).toMatch(/^WITH done AS \(DELETE/);
      // The statement is its own transaction, and commits as `synchronous_commit = off` would.
      expect(sent[0]).toContain("set_config('synchronous_commit', 'off', true)");
      // Inside a caller's transaction, the caller's commit decides.
      sent.length = 0;
      await driver.executor.transaction(async (tx) => {
        expect(await tx.messageFinishMany(finish(second))).toEqual([second.id]);
      });
      expect(sent.filter((t) => t.includes('set_config'))).toEqual([]);
    });
    const page = await b.executor.eventList({ accountId: account.id, filter: {}, count: 10 });
    expect(page.items).toHaveLength(4);
  });

  it('rejects a malformed events cursor', async () => {
    await expect(
      a.executor.eventList({ accountId: 'x', filter: {}, cursor: '1; DROP', count: 1 }),
    ).rejects.toThrow('invalid cursor');
  });
});

describe('wakeChannelOf', () => {
  it('keeps the plain name for public and gives every other schema its own short channel', () => {
    expect(wakeChannelOf('public')).toBe('ferry_wake');
    const long = 'x'.repeat(63);
    expect(wakeChannelOf(long)).not.toBe(wakeChannelOf('y'.repeat(63)));
    expect(wakeChannelOf(long)).toBe(wakeChannelOf(long));
    expect(Buffer.byteLength(wakeChannelOf(long))).toBeLessThanOrEqual(63);
  });
});

describe('chunkByBytes', () => {
  it('keeps chunks under the byte limit, with at least one item each', () => {
    const mb = 1024 * 1024;
    expect(chunkByBytes([], () => 0)).toEqual([]);
    expect(chunkByBytes([1, 2, 3], () => 10)).toEqual([[1, 2, 3]]);
    const sizes = [40 * mb, 30 * mb, 100 * mb, 1, 1];
    expect(chunkByBytes(sizes, (s) => s)).toEqual([[40 * mb], [30 * mb], [100 * mb], [1, 1]]);
  });
});
