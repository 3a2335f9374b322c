/**
 * Looks up accounts for authentication and signing. Accounts change rarely (key rotation, token
 * reset, plan change), and both the publish and the delivery paths need one per request, so
 * lookups are cached briefly. A change made on this node drops its entry at once (`forget`);
 * other nodes sharing the database see it within `ttlMs`.
 *
 * Authentication has its own cache lifetime, `authTtlMs`: when several nodes share a database, a
 * token reset or an account deletion on one node must be refused by every node's next request,
 * so the composition root sets it to 0 there (each authentication reads the row: one primary-key
 * lookup). With SQLite one process owns the database and every change goes through it.
 */
import type { Clock } from '../core/clock.js';
import { PLAN_NAMES, type PlanLimits, type PlanTable } from '../core/plans.js';
import { decodeToken, passwordMatches } from '../core/token.js';
import type { Account, PlanName } from '../core/types.js';
import type { Executor } from '../storage/driver.js';

/** Tokens whose password hash is remembered (see `authenticate`). */
const VERIFIED_TOKENS = 1_000;

export class AccountDirectory {
  private readonly cache = new Map<string, { account: Account | undefined; fetchedAt: number }>();
  /**
   * Token → the account id and stored password hash it was last verified against. Decoding the
   * token and hashing its password cost more than the rest of authentication; a token that
   * matched a hash matches it again, so only a changed hash (a token reset) needs the check.
   */
  private readonly verified = new Map<string, { accountId: string; passwordHash: string }>();
  /** Reads asked for in this turn of the event loop and not sent yet, by account id. */
  private readonly unsent = new Map<string, Promise<Account | undefined>>();

  constructor(
    private readonly executor: Executor,
    private readonly plans: PlanTable,
    private readonly clock: Clock,
    private readonly ttlMs = 1_000,
    private readonly authTtlMs = ttlMs,
  ) {}

  async get(id: string, maxAgeMs = this.ttlMs): Promise<Account | undefined> {
    const now = this.clock.now();
    const hit = this.cache.get(id);
    if (hit && now - hit.fetchedAt < maxAgeMs) return hit.account;
    const account = await this.read(id);
    if (this.cache.size > 10_000) this.cache.clear();
    this.cache.set(id, { account, fetchedAt: now });
    return account;
  }

  /**
   * Reads the account's row. Requests that need it in the same turn of the event loop share one
   * read, sent once the turn's I/O callbacks have run: each of them arrived before the read was
   * sent, so it sees any change committed before it arrived, as a read of its own would. (With
   * PostgreSQL every authentication reads the row, and under load many requests of one account
   * arrive in one turn: one statement each was a large share of the database's statements.)
   */
  private read(id: string): Promise<Account | undefined> {
    let pending = this.unsent.get(id);
    if (!pending) {
      pending = new Promise<void>((resolve) => setImmediate(resolve)).then(() => {
        this.unsent.delete(id); // from here on a request needs a read of its own
        return this.executor.accountGet({ id });
      });
      this.unsent.set(id, pending);
    }
    return pending;
  }

  /** The account a messaging token belongs to, or undefined for a wrong or unknown token. */
  async authenticate(token: string): Promise<Account | undefined> {
    const known = this.verified.get(token);
    const accountId = known?.accountId ?? decodeToken(token)?.accountId;
    if (accountId === undefined) return undefined;
    // One read either way: a hash that changed since (a reset) is checked against this row.
    const account = await this.get(accountId, this.authTtlMs);
    if (!account) return undefined;
    if (known?.passwordHash === account.passwordHash) return account;
    const decoded = decodeToken(token);
    if (!decoded || !passwordMatches(decoded.password, account.passwordHash)) return undefined;
    if (this.verified.size >= VERIFIED_TOKENS) this.verified.clear();
    this.verified.set(token, { accountId: account.id, passwordHash: account.passwordHash });
    return account;
  }

  limits(account: Account): PlanLimits {
    return this.plans[account.plan];
  }

  /**
   * One limit of every plan, for storage operations that apply it to many accounts at once and
   * read each account's plan themselves (the engine's claim and `max_global_parallelism`).
   */
  limitByPlan(field: keyof PlanLimits): Record<PlanName, number> {
    const entries = PLAN_NAMES.map((plan) => [plan, this.plans[plan][field]] as const);
    return Object.fromEntries(entries) as Record<PlanName, number>;
  }

  /** Drops a cached account after this node changed it. */
  forget(id: string): void {
    this.cache.delete(id);
  }
}
