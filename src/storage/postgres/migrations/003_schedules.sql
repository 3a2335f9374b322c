-- Cron schedules (PostgreSQL). Mirrors storage/sqlite/migrations/003_schedules.sql; unlike
-- SQLite's INTEGER 0/1, paused is a BOOLEAN.
CREATE TABLE schedules (
  account_id         TEXT NOT NULL,
  id                 TEXT NOT NULL,
  cron               TEXT NOT NULL,
  destination        TEXT NOT NULL,
  created_at         BIGINT NOT NULL,
  paused             BOOLEAN NOT NULL,
  queue_name         TEXT,
  caller_ip          TEXT NOT NULL,
  next_schedule_time BIGINT,
  last_schedule_time BIGINT,
  last_message_ids   TEXT,
  request            TEXT NOT NULL,
  spec               TEXT NOT NULL,
  body               BYTEA NOT NULL,
  PRIMARY KEY (account_id, id)
);
CREATE INDEX schedules_due ON schedules (next_schedule_time) WHERE NOT paused;
