-- Flow control and FIFO queues (SQLite). Mirrored by storage/postgres/migrations/005_flow_control_queues.sql.
-- A gate is a flow-control key (kind 'key') or a queue (kind 'queue'); see core/flow-control.ts.
CREATE TABLE flow_gates (
  id                  INTEGER PRIMARY KEY,
  account_id          TEXT NOT NULL,
  kind                TEXT NOT NULL,
  name                TEXT NOT NULL,
  parallelism         INTEGER,
  rate                INTEGER,
  period_sec          INTEGER NOT NULL,
  pinned_parallelism  INTEGER NOT NULL DEFAULT 0,
  pinned_rate         INTEGER NOT NULL DEFAULT 0,
  paused              INTEGER NOT NULL DEFAULT 0,
  rate_count          INTEGER NOT NULL DEFAULT 0,
  rate_period_start   INTEGER NOT NULL DEFAULT 0,
  -- When admission must look at the gate again; NULL: not until a release, publish or change.
  ready_at            INTEGER,
  created_at          INTEGER NOT NULL,
  updated_at          INTEGER NOT NULL,
  UNIQUE (account_id, kind, name)
);
CREATE INDEX flow_gates_ready ON flow_gates (ready_at) WHERE ready_at IS NOT NULL;

-- gate_id: the gate that orders the message (NULL for most messages). gate_mode: 'key' (a slot
-- per attempt; a retry waits again) or 'queue' (a slot until final). wait_due_at: set while the
-- message waits to be admitted; due_at is then the far-future PARKED_DUE_AT, so the due index
-- the engine claims from never reaches a waiting row. Publish order within a gate is the rowid.
ALTER TABLE messages ADD COLUMN gate_id INTEGER;
ALTER TABLE messages ADD COLUMN gate_mode TEXT;
ALTER TABLE messages ADD COLUMN wait_due_at INTEGER;
-- The wait list of a key, in admission order (due time, then publish order: the rowid).
CREATE INDEX messages_gate_wait ON messages (gate_id, wait_due_at) WHERE wait_due_at IS NOT NULL;
-- The wait list of a queue, in publish order (an index entry ends with the rowid).
CREATE INDEX messages_gate_fifo ON messages (gate_id) WHERE wait_due_at IS NOT NULL;
-- The messages holding a slot of a gate (counted at each admission: at most `parallelism` rows).
CREATE INDEX messages_gate_hold ON messages (gate_id) WHERE gate_id IS NOT NULL AND wait_due_at IS NULL;
