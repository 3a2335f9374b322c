-- Management API (SQLite): management users, account ownership and settings, metered usage,
-- search index records. PostgreSQL mirrors this file in storage/postgres/migrations/.

-- Accounts gain an owner (a management user), a region, a monthly budget in dollars and the time
-- of the last plan change. NULL where an account predates this migration or never had one.
ALTER TABLE accounts ADD COLUMN owner_id TEXT;
ALTER TABLE accounts ADD COLUMN region TEXT;
ALTER TABLE accounts ADD COLUMN budget INTEGER;
ALTER TABLE accounts ADD COLUMN plan_changed_at INTEGER;
CREATE INDEX accounts_owner ON accounts (owner_id, created_at);

-- Management users authenticate with Basic email:api_key; only a SHA-256 of the key is stored.
CREATE TABLE mgmt_users (
  id           TEXT PRIMARY KEY,
  email        TEXT NOT NULL UNIQUE,
  api_key_hash TEXT NOT NULL,
  admin        INTEGER NOT NULL,
  created_at   INTEGER NOT NULL
);

-- Metered usage: one counter per subject (an account or a search index id), minute and metric.
-- Writers add to it (UPSERT), so several nodes flushing the same minute sum up.
CREATE TABLE usage_counters (
  subject_id TEXT NOT NULL,
  minute     INTEGER NOT NULL,
  metric     TEXT NOT NULL,
  value      INTEGER NOT NULL,
  PRIMARY KEY (subject_id, minute, metric)
);

-- Search indexes: the account-side record (Ferry runs no vector database). Tokens are hashed.
CREATE TABLE search_indexes (
  id                  TEXT PRIMARY KEY,
  owner_id            TEXT NOT NULL,
  name                TEXT NOT NULL,
  endpoint            TEXT NOT NULL,
  type                TEXT NOT NULL,
  region              TEXT NOT NULL,
  token_hash          TEXT NOT NULL,
  read_only_token_hash TEXT NOT NULL,
  created_at          INTEGER NOT NULL
);
CREATE INDEX search_indexes_owner ON search_indexes (owner_id, created_at);
