/**
 * The driver conformance suite (after River's `riverdrivertest.Exercise`): one set of cases that
 * every storage driver must pass, written against the contract in `driver.ts` only.
 *
 *     runDriverConformance('sqlite-memory', async () => openSqliteDriver({ path: ':memory:' }));
 *
 * The suite opens one driver, migrates it, and runs every case on it. Cases create their own
 * accounts and ids, so they do not depend on each other or on an empty database; the exceptions
 * are operations that have no account scope (claiming, pruning), whose cases first clear or
 * fence off the rows they could see. The database must not be used by anything else while the
 * suite runs. A driver that cannot pass a case skips it with a written reason (STYLE.md).
 */
import { afterAll, beforeAll, describe } from 'vitest';
import type { Driver, Executor } from '../driver.js';
import { accountCases } from './account-cases.js';
import { bodyCutCases } from './body-cut-cases.js';
import { sharedBodyCases } from './shared-body-cases.js';
import { bulkCancelCases } from './bulk-cancel-cases.js';
import { claimLimitCases } from './claim-limit-cases.js';
import { spreadCases } from './spread-cases.js';
import { dedupCases } from './dedup-cases.js';
import { dlqCases } from './dlq-cases.js';
import { eventCases } from './event-cases.js';
import { flowGateCases } from './flow-gate-cases.js';
import { leaseCases } from './lease-cases.js';
import { limitCases } from './limit-cases.js';
import { managementCases } from './management-cases.js';
import { lifecycleCases } from './lifecycle-cases.js';
import { messageCases } from './message-cases.js';
import { runMessageCases } from './run-message-cases.js';
import { scheduleCases } from './schedule-cases.js';
import { statsCases } from './stats-cases.js';
import { transactionCases } from './transaction-cases.js';
import { urlGroupCases } from './url-group-cases.js';
import { workflowCases } from './workflow-cases.js';
import { workflowWaiterCases } from './workflow-waiter-cases.js';

/** What each group of cases gets: the suite's driver, and how to open more. */
export interface SuiteContext {
  /** The executor of the suite's driver (available inside tests, not at collection time). */
  executor(): Executor;
  driver(): Driver;
  open(): Promise<Driver>;
  close(driver: Driver): Promise<void>;
}

/**
 * Registers the conformance cases for one driver under `describe(name)`.
 * @param open opens a driver on the database under test (it need not be migrated yet)
 * @param close closes a driver opened by `open`; default `driver.close()`
 */
export function runDriverConformance(
  name: string,
  open: () => Promise<Driver>,
  close: (driver: Driver) => Promise<void> = (driver) => driver.close(),
): void {
  describe(`driver conformance: ${name}`, () => {
    let current: Driver | undefined;
    beforeAll(async () => {
      current = await open();
      await current.migrate();
    });
    afterAll(async () => {
      if (current) await close(current);
      current = undefined;
    });

    const driver = (): Driver => {
      if (!current) throw new Error('the conformance driver is not open');
      return current;
    };
    const ctx: SuiteContext = { driver, executor: () => driver().executor, open, close };

    describe('lifecycle', () => lifecycleCases(ctx));
    describe('accounts', () => accountCases(ctx));
    describe('messages', () => messageCases(ctx));
    describe('claims and leases', () => leaseCases(ctx));
    describe('claims under max_global_parallelism', () => claimLimitCases(ctx));
    describe('spreading an origin’s due messages', () => spreadCases(ctx));
    describe('bulk cancel (messageDeleteMany)', () => bulkCancelCases(ctx));
    describe('transactions', () => transactionCases(ctx));
    describe('events', () => eventCases(ctx));
    describe('list body cuts', () => bodyCutCases(ctx));
    describe('bodies stored once', () => sharedBodyCases(ctx));
    describe('dead-letter queue', () => dlqCases(ctx));
    describe('deduplication', () => dedupCases(ctx));
    describe('URL groups', () => urlGroupCases(ctx));
    describe('workflow runs', () => workflowCases(ctx));
    describe('workflow waiters', () => workflowWaiterCases(ctx));
    describe('workflow runs’ messages', () => runMessageCases(ctx));
    describe('management', () => managementCases(ctx));
    describe('schedules', () => scheduleCases(ctx));
    describe('account limits', () => limitCases(ctx));
    describe('flow control and queues', () => flowGateCases(ctx));
    describe('metrics counts and readiness', () => statsCases(ctx));
  });
}
