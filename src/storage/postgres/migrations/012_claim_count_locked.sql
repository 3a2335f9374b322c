-- The engine's claim as one statement (messageClaimDueLimited). Limited claims run one at a
-- time: each takes a transaction-scoped advisory lock, then counts the account's leases. That
-- count must see every lease committed by the claim that held the lock before, which a plain
-- statement cannot: its snapshot is taken when it starts, before it waits for the lock. So the
-- lock was a statement of its own, and the claim needed a transaction around the two.
-- A VOLATILE function takes a fresh snapshot for each query it runs (READ COMMITTED): this one
-- takes the lock, then counts as ferry_leased_count (migration 009) does, with a snapshot from
-- after the lock. The lock is held until the claim's transaction ends: its own statement's, or
-- the caller's. Claims of nodes still on the two-statement form take the same lock.
CREATE FUNCTION ferry_leased_count_locked(account TEXT, at_ms BIGINT, lock_class INTEGER)
  RETURNS BIGINT LANGUAGE plpgsql VOLATILE SET enable_bitmapscan = off AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(lock_class, hashtext(current_schema()));
  RETURN (SELECT count(*) FROM messages
          WHERE account_id = account AND lease_token IS NOT NULL AND due_at > at_ms);
END $$;
