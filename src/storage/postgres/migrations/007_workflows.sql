-- Workflow runs (PostgreSQL). SQLite has the same tables in storage/sqlite/migrations/007_workflows.sql.
-- A run's filterable fields are columns; the rest (settings, result, the DLQ entry with the failed
-- step message) is one JSON document. A run in the workflow DLQ has dlq_id set.
CREATE TABLE workflow_runs (
  account_id       TEXT NOT NULL,
  run_id           TEXT NOT NULL,
  url              TEXT NOT NULL,
  state            TEXT NOT NULL,
  created_at       BIGINT NOT NULL,
  updated_at       BIGINT NOT NULL,
  caller_ip        TEXT NOT NULL,
  labels           TEXT,
  flow_control_key TEXT,
  dlq_id           TEXT,
  failure_state    TEXT,
  doc              TEXT NOT NULL,
  PRIMARY KEY (account_id, run_id)
);
CREATE INDEX workflow_runs_created ON workflow_runs (account_id, created_at);
CREATE UNIQUE INDEX workflow_runs_dlq ON workflow_runs (account_id, dlq_id) WHERE dlq_id IS NOT NULL;

-- The history of each run: entry 0 is the trigger's payload, then every step result in the order
-- it was published.
CREATE TABLE workflow_steps (
  account_id TEXT NOT NULL,
  run_id     TEXT NOT NULL,
  seq        INTEGER NOT NULL,
  message_id TEXT NOT NULL,
  call_type  TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  body       BYTEA NOT NULL,
  PRIMARY KEY (account_id, run_id, seq)
);
