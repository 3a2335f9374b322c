-- Account limits (issue 5).

-- The size of each account's DLQ, kept by triggers so that every path that adds or removes
-- entries (outcomes, retries, deletes, retention, account deletion) keeps it true, and
-- max_dlq_size is checked without counting the account's entries. Unlike SQLite's row triggers,
-- these run once per statement over its transition table, so a retention sweep of 5,000 rows is
-- one grouped update. Inserts touch the rows in account order; a deadlock between two
-- transactions that touch the same accounts in another order is detected by PostgreSQL and one
-- of them rolls back (an outcome transaction is then redone after its lease, at least once).
CREATE TABLE dlq_sizes (
  account_id TEXT PRIMARY KEY,
  size       BIGINT NOT NULL
);

INSERT INTO dlq_sizes (account_id, size) SELECT account_id, COUNT(*) FROM dlq GROUP BY account_id;

CREATE FUNCTION dlq_sizes_add() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO dlq_sizes (account_id, size)
    SELECT account_id, COUNT(*) FROM dlq_added GROUP BY account_id ORDER BY account_id
    ON CONFLICT (account_id) DO UPDATE SET size = dlq_sizes.size + EXCLUDED.size;
  RETURN NULL;
END $$;

CREATE FUNCTION dlq_sizes_remove() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE dlq_sizes s SET size = s.size - r.n
    FROM (SELECT account_id, COUNT(*) AS n FROM dlq_removed GROUP BY account_id ORDER BY account_id) r
    WHERE s.account_id = r.account_id;
  RETURN NULL;
END $$;

CREATE TRIGGER dlq_size_insert AFTER INSERT ON dlq
  REFERENCING NEW TABLE AS dlq_added FOR EACH STATEMENT EXECUTE FUNCTION dlq_sizes_add();
CREATE TRIGGER dlq_size_delete AFTER DELETE ON dlq
  REFERENCING OLD TABLE AS dlq_removed FOR EACH STATEMENT EXECUTE FUNCTION dlq_sizes_remove();

-- max_requests_per_second across nodes: one row per account holding the current one-second
-- window and the requests counted in it, incremented atomically by every node.
CREATE TABLE rate_counters (
  subject_id   TEXT PRIMARY KEY,
  window_start BIGINT NOT NULL,
  count        BIGINT NOT NULL
);
