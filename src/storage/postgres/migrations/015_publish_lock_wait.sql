-- A publish given leases (014) took the claim lock only if it was free. At 500 messages/s on one
-- node about one publish in ten found it held, mostly by the publish before it while that one's
-- commit was flushed, and stored its messages unleased for a claim to take: one more statement,
-- and a few milliseconds more before their delivery. A publish now waits for the lock up to
-- `wait_ms` (the driver passes a few ms: longer than a publish holds it, short enough that a
-- long claim or a queue of publishes does not hold the answer up), and stores its messages
-- unleased only past that. The statement calls this once per account: after one call has given
-- up, the others of its transaction do not wait again. The function's own SET restores the
-- lock_timeout it sets. ferry_leased_count_try_locked stays for nodes not yet upgraded.
CREATE FUNCTION ferry_leased_count_wait_locked(
  account TEXT, at_ms BIGINT, lock_class INTEGER, wait_ms INTEGER)
  RETURNS BIGINT LANGUAGE plpgsql VOLATILE
  SET enable_bitmapscan = off SET lock_timeout = 0 AS $$
BEGIN
  IF current_setting('ferry.claim_lock_given_up', true) = 'on' THEN
    RETURN NULL;
  END IF;
  BEGIN
    PERFORM set_config('lock_timeout', wait_ms || 'ms', true);
    PERFORM pg_advisory_xact_lock(lock_class, hashtext(current_schema()));
  EXCEPTION WHEN lock_not_available THEN
    PERFORM set_config('ferry.claim_lock_given_up', 'on', true);
    RETURN NULL;
  END;
  RETURN (SELECT count(*) FROM messages
          WHERE account_id = account AND lease_token IS NOT NULL AND due_at > at_ms);
END $$;
