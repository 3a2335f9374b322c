-- Ferry schema v1 (PostgreSQL). Mirrors storage/sqlite/migrations/001_init.sql: same tables,
-- columns, names and indexes. Times are Unix ms (BIGINT). JSON columns are TEXT, not JSONB, so
-- they keep byte for byte what the application wrote (JSONB would reorder keys) and so both
-- dialects store the same text. Bodies are BYTEA where SQLite has BLOB.
-- Requires PostgreSQL 13 or later (the claim uses the built-in gen_random_uuid()).

CREATE TABLE accounts (
  id                  TEXT PRIMARY KEY,
  plan                TEXT NOT NULL,
  password_hash       TEXT NOT NULL,
  current_signing_key TEXT NOT NULL,
  next_signing_key    TEXT NOT NULL,
  created_at          BIGINT NOT NULL
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
  not_before       BIGINT NOT NULL,
  created_at       BIGINT NOT NULL,
  due_at           BIGINT NOT NULL,
  lease_token      TEXT,
  spec             TEXT NOT NULL,
  body             BYTEA NOT NULL
);
CREATE INDEX messages_due_at ON messages (due_at);

-- The append-only log. header/body are stored on the CREATED event only and joined for the rest.
-- Unlike SQLite's INTEGER PRIMARY KEY (the rowid), the id comes from an identity sequence; both
-- increase with insertion order, which is what the list cursor relies on.
CREATE TABLE events (
  id                 BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  account_id         TEXT NOT NULL,
  message_id         TEXT NOT NULL,
  time               BIGINT NOT NULL,
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
  body               BYTEA,
  error              TEXT,
  next_delivery_time BIGINT,
  response_status    INTEGER,
  response_header    TEXT,
  response_body      BYTEA
);
CREATE INDEX events_account_id ON events (account_id, id);
CREATE INDEX events_message ON events (message_id, state);
CREATE INDEX events_time ON events (time);

-- dlq_id is the list order and cursor. Unlike SQLite, which compares TEXT bytewise, PostgreSQL
-- orders TEXT by the database collation (en_US would, e.g., ignore case at the first level), so
-- the column is COLLATE "C" to sort bytewise like SQLite, whatever the database default is.
CREATE TABLE dlq (
  dlq_id           TEXT COLLATE "C" PRIMARY KEY,
  account_id       TEXT NOT NULL,
  message_id       TEXT NOT NULL,
  created_at       BIGINT NOT NULL,
  expires_at       BIGINT NOT NULL,
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
  response_body    BYTEA,
  error            TEXT,
  message          TEXT NOT NULL,
  body             BYTEA NOT NULL
);
CREATE INDEX dlq_account ON dlq (account_id, dlq_id);
CREATE INDEX dlq_expires ON dlq (expires_at);

CREATE TABLE dedup (
  account_id TEXT NOT NULL,
  key        TEXT NOT NULL,
  message_id TEXT NOT NULL,
  expires_at BIGINT NOT NULL,
  PRIMARY KEY (account_id, key)
);
CREATE INDEX dedup_expires ON dedup (expires_at);
