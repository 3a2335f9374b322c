-- Cron schedules (SQLite). PostgreSQL mirrors this in storage/postgres/migrations/003_schedules.sql.
-- Ids are unique per account (the caller may choose them), so the key is (account_id, id).
-- request/spec/last_message_ids are JSON (TEXT); paused is 0 or 1.
CREATE TABLE schedules (
  account_id         TEXT NOT NULL,
  id                 TEXT NOT NULL,
  cron               TEXT NOT NULL,
  destination        TEXT NOT NULL,
  created_at         INTEGER NOT NULL,
  paused             INTEGER NOT NULL,
  queue_name         TEXT,
  caller_ip          TEXT NOT NULL,
  next_schedule_time INTEGER,
  last_schedule_time INTEGER,
  last_message_ids   TEXT,
  request            TEXT NOT NULL,
  spec               TEXT NOT NULL,
  body               BLOB NOT NULL,
  PRIMARY KEY (account_id, id)
);
-- The scheduler's due lookup: only schedules that can fire.
CREATE INDEX schedules_due ON schedules (next_schedule_time) WHERE paused = 0;
