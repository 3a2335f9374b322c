-- max_global_parallelism across nodes (issue 5). Mirrored by storage/sqlite/migrations/009_leased_messages.sql.
-- The engine's claim (messageClaimDueLimited) counts each candidate account's leased, unexpired
-- messages: its deliveries in flight on every node. Leased rows are few (what all nodes have in
-- flight, plus expired leases not yet claimed again) whatever the backlog, so this partial index
-- keeps that count a short range read; due_at is in the key so the expiry test needs no other
-- lookup. A lease ends by clearing lease_token (retry, release) or deleting the row, which takes
-- the row out of the index; an expired lease is simply not counted, so a dead node's share of
-- the limit comes back when its leases expire.
CREATE INDEX messages_leased ON messages (account_id, due_at) WHERE lease_token IS NOT NULL;

-- The count, as an index-only scan of messages_leased. A delivered message leaves a dead entry
-- in the index, inside the counted range (due_at > now) until its lease would have expired, so
-- the range holds about throughput × lease length dead entries between vacuums. A plain or
-- index-only scan marks each such entry dead the first time it finds its row gone, and later
-- counts skip it without reading the table; a bitmap scan, which the planner picks for so few
-- live rows, marks nothing and reads every one of them again on every count (measured: 30,000
-- dead entries cost 3-5 ms per count with a bitmap scan, 0.2 ms with this one). Hence the SET.
CREATE FUNCTION ferry_leased_count(account TEXT, at_ms BIGINT) RETURNS BIGINT
  LANGUAGE plpgsql STABLE SET enable_bitmapscan = off AS $$
BEGIN
  RETURN (SELECT count(*) FROM messages
          WHERE account_id = account AND lease_token IS NOT NULL AND due_at > at_ms);
END $$;
