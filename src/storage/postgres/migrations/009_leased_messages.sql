-- max_global_parallelism across nodes (issue 5). Mirrored by storage/sqlite/migrations/009_leased_messages.sql.
-- The engine's claim (messageClaimDueLimited) counts each candidate account's leased, unexpired
-- messages: its deliveries in flight on every node. Leased rows are few (what all nodes have in
-- flight, plus expired leases not yet claimed again) whatever the backlog, so this partial index
-- keeps that count a short range read; due_at is in the key so the expiry test needs no other
-- lookup. A lease ends by clearing lease_token (retry, release) or deleting the row, which takes
-- the row out of the index; an expired lease is simply not counted, so a dead node's share of
-- the limit comes back when its leases expire.
CREATE INDEX messages_leased ON messages (account_id, due_at) WHERE lease_token IS NOT NULL;
