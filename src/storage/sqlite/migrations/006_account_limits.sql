-- Account limits (issue 5): the size of each account's DLQ, kept by triggers so that every path
-- that adds or removes entries (outcomes, retries, deletes, retention, account deletion) keeps it
-- true, and max_dlq_size is checked without counting the account's entries.
--
-- The per-second request counter of max_requests_per_second has no table here: one process owns
-- a SQLite database, so the driver counts in memory (see sqlite-rate-counter.ts).
CREATE TABLE dlq_sizes (
  account_id TEXT PRIMARY KEY,
  size       INTEGER NOT NULL
);

INSERT INTO dlq_sizes (account_id, size) SELECT account_id, COUNT(*) FROM dlq GROUP BY account_id;

CREATE TRIGGER dlq_size_insert AFTER INSERT ON dlq BEGIN
  INSERT INTO dlq_sizes (account_id, size) VALUES (NEW.account_id, 1)
    ON CONFLICT (account_id) DO UPDATE SET size = size + 1;
END;

CREATE TRIGGER dlq_size_delete AFTER DELETE ON dlq BEGIN
  UPDATE dlq_sizes SET size = size - 1 WHERE account_id = OLD.account_id;
END;
