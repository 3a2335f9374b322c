-- A publish that hands its messages to its own node's engine stores them leased (Engine.reserve,
-- messagePublishMany), within max_global_parallelism as exactly as the claim: under the claim's
-- advisory lock, counting with a snapshot from after it (see 012). But a publish does not wait
-- for it: when another transaction holds the lock, this returns NULL, and the publish stores its
-- messages unleased, for a claim to take. Held, the lock lasts to the publish's commit.
CREATE FUNCTION ferry_leased_count_try_locked(account TEXT, at_ms BIGINT, lock_class INTEGER)
  RETURNS BIGINT LANGUAGE plpgsql VOLATILE SET enable_bitmapscan = off AS $$
BEGIN
  IF NOT pg_try_advisory_xact_lock(lock_class, hashtext(current_schema())) THEN
    RETURN NULL;
  END IF;
  RETURN (SELECT count(*) FROM messages
          WHERE account_id = account AND lease_token IS NOT NULL AND due_at > at_ms);
END $$;
