-- Ferry schema v1 (SQLite). Times are Unix ms (INTEGER). JSON columns are TEXT.
-- PostgreSQL mirrors this file in storage/postgres/migrations/001_init.sql; keep names equal.

CREATE TABLE accounts (
  id                  TEXT PRIMARY KEY,
  plan                TEXT NOT NULL,
  password_hash       TEXT NOT NULL,
  current_signing_key TEXT NOT NULL,
  next_signing_key    TEXT NOT NULL,
  created_at          INTEGER NOT NULL
);

-- The hot table: only messages that are not final. A claim sets due_at to the lease expiry and a
-- fresh lease_token, so a dead node's messages become due again without a separate rescuer.
CREATE TABLE messages (
  id               TEXT PRIMARY KEY,
  account_id       TEXT NOT NULL,
  url              TEXT NOT NULL,
  url_host         TEXT NOT NULL,
  url_path         TEXT NOT NULL,
  topic_name       TEXT,
  endpoint_name    TEXT,
  queue_name       TEXT,
  schedule_id      TEXT,
  labels           TEXT,
  flow_control_key TEXT,
  caller_ip        TEXT NOT NULL,
  retried          INTEGER NOT NULL,
  max_retries      INTEGER NOT NULL,
  not_before       INTEGER NOT NULL,
  created_at       INTEGER NOT NULL,
  due_at           INTEGER NOT NULL,
  lease_token      TEXT,
  spec             TEXT NOT NULL,
  body             BLOB NOT NULL
);
CREATE INDEX messages_due_at ON messages (due_at);
-- No index on account_id: the table holds only messages that are not final, every lookup by id
-- uses the primary key, and each index costs a page in the WAL of every publish and delivery.

-- The append-only log. header/body are stored on the CREATED event only and joined for the rest.
-- A plain INTEGER PRIMARY KEY, not AUTOINCREMENT: ids still increase (pruning removes the oldest
-- rows, never the newest), and AUTOINCREMENT would write sqlite_sequence in every commit.
CREATE TABLE events (
  id                 INTEGER PRIMARY KEY,
  account_id         TEXT NOT NULL,
  message_id         TEXT NOT NULL,
  time               INTEGER NOT NULL,
  state              TEXT NOT NULL,
  url                TEXT NOT NULL,
  url_host           TEXT NOT NULL,
  url_path           TEXT NOT NULL,
  method             TEXT NOT NULL,
  topic_name         TEXT,
  endpoint_name      TEXT,
  queue_name         TEXT,
  schedule_id        TEXT,
  labels             TEXT,
  flow_control_key   TEXT,
  caller_ip          TEXT NOT NULL,
  retried            INTEGER NOT NULL,
  max_retries        INTEGER NOT NULL,
  header             TEXT,
  body               BLOB,
  error              TEXT,
  next_delivery_time INTEGER,
  response_status    INTEGER,
  response_header    TEXT,
  response_body      BLOB
);
CREATE INDEX events_account_id ON events (account_id, id);
CREATE INDEX events_message ON events (message_id, state);
CREATE INDEX events_time ON events (time);

CREATE TABLE dlq (
  dlq_id           TEXT PRIMARY KEY,
  account_id       TEXT NOT NULL,
  message_id       TEXT NOT NULL,
  created_at       INTEGER NOT NULL,
  expires_at       INTEGER NOT NULL,
  url              TEXT NOT NULL,
  url_host         TEXT NOT NULL,
  url_path         TEXT NOT NULL,
  topic_name       TEXT,
  queue_name       TEXT,
  schedule_id      TEXT,
  labels           TEXT,
  flow_control_key TEXT,
  caller_ip        TEXT NOT NULL,
  response_status  INTEGER,
  response_header  TEXT,
  response_body    BLOB,
  error            TEXT,
  message          TEXT NOT NULL,
  body             BLOB NOT NULL
);
CREATE INDEX dlq_account ON dlq (account_id, dlq_id);
CREATE INDEX dlq_expires ON dlq (expires_at);

CREATE TABLE dedup (
  account_id TEXT NOT NULL,
  key        TEXT NOT NULL,
  message_id TEXT NOT NULL,
  expires_at INTEGER NOT NULL,
  PRIMARY KEY (account_id, key)
);
CREATE INDEX dedup_expires ON dedup (expires_at);
