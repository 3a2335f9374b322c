-- Runs waiting for an event (context.waitForEvent). SQLite has the same table in storage/sqlite/migrations/008_workflow_waiters.sql.
-- A waiter's id is its timeout message's id; a notify or the timeout deletes the row, and only
-- the one that deleted it wakes the run. The rest (step, headers) is one JSON document.
CREATE TABLE workflow_waiters (
  account_id TEXT NOT NULL,
  id         TEXT NOT NULL,
  event_id   TEXT NOT NULL,
  run_id     TEXT NOT NULL,
  deadline   BIGINT NOT NULL,
  created_at BIGINT NOT NULL,
  doc        TEXT NOT NULL,
  PRIMARY KEY (account_id, id)
);
CREATE INDEX workflow_waiters_event ON workflow_waiters (account_id, event_id, created_at);
