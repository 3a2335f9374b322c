-- URL groups and redaction (SQLite). Mirrored by storage/postgres/migrations/002_url_groups_redaction.sql.

-- One row per URL group ("topic"). Endpoints and default headers are JSON: a group is small
-- (the plan's max_endpoints_per_topic) and is read whole on every publish to it.
CREATE TABLE url_groups (
  account_id TEXT NOT NULL,
  name       TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  endpoints  TEXT NOT NULL,
  headers    TEXT,
  PRIMARY KEY (account_id, name)
);

-- The log never stores a redacted body: the CREATED event of such a message has body NULL and
-- this column holds the REDACTED:<sha256 hex> text shown instead.
ALTER TABLE events ADD COLUMN body_redacted TEXT;
