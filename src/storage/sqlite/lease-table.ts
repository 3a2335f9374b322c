/**
 * Leases of the SQLite driver, kept in memory.
 *
 * A lease only has to keep two claimers from delivering the same message at once, and a SQLite
 * database file belongs to one process (the driver holds its lock file, see database-lock.ts), so
 * every claimer is in this process. Keeping leases here instead of in the row makes a claim a
 * pure read: no commit, no WAL pages, no fsync pressure on the publishes that must wait for one.
 * After a crash the table is empty, which is exactly an expired lease: every message is due
 * again at restart. (PostgreSQL, shared by many nodes, keeps leases in the row.)
 *
 * Changes made inside a transaction are journaled and undone if it (or a savepoint) rolls back,
 * so the table always matches the committed database.
 */
export interface MemoryLease {
  token: string;
  /** Until when no other claim may take the message, ms. */
  until: number;
}

export class LeaseTable {
  private readonly leases = new Map<string, MemoryLease>();
  /** Undo actions of the open transaction, newest last; undefined outside a transaction. */
  private journal: (() => void)[] | undefined;

  get size(): number {
    return this.leases.size;
  }

  get(id: string): MemoryLease | undefined {
    return this.leases.get(id);
  }

  /** True when `token` is the message's current lease (expired or not, until someone re-claims). */
  holds(id: string, token: string): boolean {
    return this.leases.get(id)?.token === token;
  }

  /** True when the message is leased and the lease has not expired at `now`. */
  isLeased(id: string, now: number): boolean {
    const lease = this.leases.get(id);
    return lease !== undefined && lease.until > now;
  }

  set(id: string, lease: MemoryLease): void {
    this.remember(id);
    this.leases.set(id, lease);
  }

  delete(id: string): void {
    if (!this.leases.has(id)) return;
    this.remember(id);
    this.leases.delete(id);
  }

  /** Ids of the leases that have not expired at `now`. */
  *liveIds(now: number): Iterable<string> {
    for (const [id, lease] of this.leases) if (lease.until > now) yield id;
  }

  /** The earliest lease expiry after `after` (or at all), for the next-due computation. */
  earliestUntil(after: number | undefined): number | undefined {
    let earliest: number | undefined;
    for (const { until } of this.leases.values()) {
      if (after !== undefined && until <= after) continue;
      if (earliest === undefined || until < earliest) earliest = until;
    }
    return earliest;
  }

  begin(): void {
    this.journal = [];
  }

  commit(): void {
    this.journal = undefined;
  }

  rollback(): void {
    this.rollbackTo(0);
    this.journal = undefined;
  }

  /** A point to roll back to (a savepoint); 0 outside a transaction. */
  mark(): number {
    return this.journal?.length ?? 0;
  }

  rollbackTo(mark: number): void {
    const journal = this.journal;
    if (!journal) return;
    while (journal.length > mark) (journal.pop() as () => void)();
  }

  private remember(id: string): void {
    if (!this.journal) return;
    const previous = this.leases.get(id);
    this.journal.push(() => {
      if (previous) this.leases.set(id, previous);
      else this.leases.delete(id);
    });
  }
}
