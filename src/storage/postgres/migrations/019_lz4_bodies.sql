-- Bodies compressed with lz4 instead of pglz (PostgreSQL only; SQLite compresses nothing).
-- PostgreSQL compresses a value when its row passes about 2 KiB (TOAST): an inline body of 2–4
-- KiB in messages and in its CREATED event, a shared body's `head` (up to 64 KiB), a response
-- body. With lz4 the server's CPU per delivered message fell from 604 to 436 µs with 8 KiB JSON
-- bodies, from 380 to 358 µs with 3 KiB ones, at some more disk (docs/benchmarks-log.md,
-- "PostgreSQL: bodies compressed with lz4"). Only the column
-- setting changes: no row is rewritten, values stored before stay pglz and read as before.
-- lz4 needs PostgreSQL 14 and a server built with it (Debian's and the official images are);
-- elsewhere this migration changes nothing. EXECUTE, so that PostgreSQL 13 never parses the
-- clause it does not know.
DO $$
BEGIN
  IF current_setting('server_version_num')::int >= 140000 THEN
    EXECUTE 'ALTER TABLE messages ALTER COLUMN body SET COMPRESSION lz4';
    EXECUTE 'ALTER TABLE events ALTER COLUMN body SET COMPRESSION lz4';
    EXECUTE 'ALTER TABLE events ALTER COLUMN response_body SET COMPRESSION lz4';
    EXECUTE 'ALTER TABLE dlq ALTER COLUMN body SET COMPRESSION lz4';
    EXECUTE 'ALTER TABLE dlq ALTER COLUMN response_body SET COMPRESSION lz4';
    EXECUTE 'ALTER TABLE schedules ALTER COLUMN body SET COMPRESSION lz4';
    EXECUTE 'ALTER TABLE workflow_steps ALTER COLUMN body SET COMPRESSION lz4';
    EXECUTE 'ALTER TABLE bodies ALTER COLUMN head SET COMPRESSION lz4';
  END IF;
EXCEPTION WHEN feature_not_supported THEN
  -- A server built without lz4: every column keeps pglz.
  NULL;
END $$;
