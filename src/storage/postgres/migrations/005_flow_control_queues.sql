-- Flow control and FIFO queues (PostgreSQL). Mirrors storage/sqlite/migrations/005_flow_control_queues.sql;
-- unlike SQLite's INTEGER 0/1 the flags are BOOLEAN, and publish order is an explicit `seq`
-- (SQLite uses the rowid, which PostgreSQL tables do not have).
CREATE TABLE flow_gates (
  id                  BIGSERIAL PRIMARY KEY,
  account_id          TEXT NOT NULL,
  kind                TEXT NOT NULL,
  name                TEXT NOT NULL,
  parallelism         INTEGER,
  rate                INTEGER,
  period_sec          INTEGER NOT NULL,
  pinned_parallelism  BOOLEAN NOT NULL DEFAULT false,
  pinned_rate         BOOLEAN NOT NULL DEFAULT false,
  paused              BOOLEAN NOT NULL DEFAULT false,
  rate_count          INTEGER NOT NULL DEFAULT 0,
  rate_period_start   BIGINT NOT NULL DEFAULT 0,
  ready_at            BIGINT,
  created_at          BIGINT NOT NULL,
  updated_at          BIGINT NOT NULL,
  UNIQUE (account_id, kind, name)
);
CREATE INDEX flow_gates_ready ON flow_gates (ready_at) WHERE ready_at IS NOT NULL;

ALTER TABLE messages ADD COLUMN gate_id BIGINT;
ALTER TABLE messages ADD COLUMN gate_mode TEXT;
ALTER TABLE messages ADD COLUMN wait_due_at BIGINT;
-- Set only for gated messages (from messages_seq), so other inserts pay nothing for it.
ALTER TABLE messages ADD COLUMN seq BIGINT;
CREATE SEQUENCE messages_seq;
-- The wait list of a key (due time, then publish order) and of a queue (publish order).
CREATE INDEX messages_gate_wait ON messages (gate_id, wait_due_at, seq) WHERE wait_due_at IS NOT NULL;
CREATE INDEX messages_gate_fifo ON messages (gate_id, seq) WHERE wait_due_at IS NOT NULL;
CREATE INDEX messages_gate_hold ON messages (gate_id) WHERE gate_id IS NOT NULL AND wait_due_at IS NULL;
