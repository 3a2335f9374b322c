-- Bodies stored once (issue 21, point 2). Mirrors storage/sqlite/migrations/011_shared_bodies.sql,
-- which explains the layout: bodies longer than 4 KiB live once in `bodies` and are referenced
-- by `body_id` from messages, events (CREATED) and DLQ entries; `head` is the first 64 KiB that
-- lists read; `data` the whole body when longer than the head.
CREATE TABLE bodies (
  id   TEXT PRIMARY KEY,
  size BIGINT NOT NULL,
  head BYTEA NOT NULL,
  data BYTEA
);
-- Uncompressed out-of-line storage: a body is usually already compressed or small enough not to
-- gain, and substring() of an EXTERNAL value fetches only the TOAST chunks it needs (a bodyCut
-- past the head), where a compressed value must be decompressed whole.
ALTER TABLE bodies ALTER COLUMN data SET STORAGE EXTERNAL;

-- Reference counts, apart from `bodies` like on SQLite (an UPDATE writes a new row version).
-- A count of 0 does not delete at once (the same transaction may add a reference again: an
-- outcome deletes the message, then inserts its DLQ entry); the pruner deletes bodies at 0
-- (bodyDeleteUnreferenced) together with their count row, locking it, so a transaction that
-- takes a reference at the same moment either waits and then fails on the missing row (RAISE
-- below) or wins and keeps the body.
CREATE TABLE body_refs (
  body_id TEXT PRIMARY KEY,
  refs    BIGINT NOT NULL
);
CREATE INDEX body_refs_unreferenced ON body_refs (body_id) WHERE refs <= 0;

ALTER TABLE messages ADD COLUMN body_id TEXT;
ALTER TABLE events ADD COLUMN body_id TEXT;
ALTER TABLE dlq ADD COLUMN body_id TEXT;

INSERT INTO bodies (id, size, head, data)
  SELECT 'm' || id, octet_length(body), substring(body from 1 for 65536),
         CASE WHEN octet_length(body) > 65536 THEN body END
  FROM messages WHERE octet_length(body) > 4096;
UPDATE messages SET body_id = 'm' || id, body = '\x'::bytea WHERE octet_length(body) > 4096;

UPDATE events e SET body_id = 'm' || e.message_id, body = NULL
  WHERE e.state = 'CREATED' AND octet_length(e.body) > 4096
    AND EXISTS (SELECT 1 FROM messages m WHERE m.id = e.message_id AND m.body_id IS NOT NULL);
INSERT INTO bodies (id, size, head, data)
  SELECT 'e' || id, octet_length(body), substring(body from 1 for 65536),
         CASE WHEN octet_length(body) > 65536 THEN body END
  FROM events WHERE octet_length(body) > 4096;
UPDATE events SET body_id = 'e' || id, body = NULL WHERE octet_length(body) > 4096;

INSERT INTO bodies (id, size, head, data)
  SELECT 'd' || dlq_id, octet_length(body), substring(body from 1 for 65536),
         CASE WHEN octet_length(body) > 65536 THEN body END
  FROM dlq WHERE octet_length(body) > 4096;
UPDATE dlq SET body_id = 'd' || dlq_id, body = '\x'::bytea WHERE octet_length(body) > 4096;

INSERT INTO body_refs (body_id, refs)
  SELECT body_id, count(*) FROM (
    SELECT body_id FROM messages WHERE body_id IS NOT NULL
    UNION ALL SELECT body_id FROM events WHERE body_id IS NOT NULL
    UNION ALL SELECT body_id FROM dlq WHERE body_id IS NOT NULL
  ) r GROUP BY body_id;

-- Row triggers with a WHEN clause: a row with an inline body (most rows) runs no trigger at
-- all, where a statement trigger with a transition table (like dlq_sizes, migration 006) would
-- materialize every inserted row of the hottest tables. Two transactions that drop references to
-- the same two bodies in opposite orders can deadlock; PostgreSQL detects it and rolls one back
-- (an outcome transaction is then redone after its lease: at least once, as in migration 006).
CREATE FUNCTION body_ref() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE body_refs SET refs = refs + 1 WHERE body_id = NEW.body_id;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'body % is not stored', NEW.body_id;
  END IF;
  RETURN NULL;
END $$;

CREATE FUNCTION body_unref() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE body_refs SET refs = refs - 1 WHERE body_id = OLD.body_id;
  RETURN NULL;
END $$;

CREATE TRIGGER messages_body_ref AFTER INSERT ON messages
  FOR EACH ROW WHEN (NEW.body_id IS NOT NULL) EXECUTE FUNCTION body_ref();
CREATE TRIGGER messages_body_unref AFTER DELETE ON messages
  FOR EACH ROW WHEN (OLD.body_id IS NOT NULL) EXECUTE FUNCTION body_unref();
CREATE TRIGGER events_body_ref AFTER INSERT ON events
  FOR EACH ROW WHEN (NEW.body_id IS NOT NULL) EXECUTE FUNCTION body_ref();
CREATE TRIGGER events_body_unref AFTER DELETE ON events
  FOR EACH ROW WHEN (OLD.body_id IS NOT NULL) EXECUTE FUNCTION body_unref();
CREATE TRIGGER dlq_body_ref AFTER INSERT ON dlq
  FOR EACH ROW WHEN (NEW.body_id IS NOT NULL) EXECUTE FUNCTION body_ref();
CREATE TRIGGER dlq_body_unref AFTER DELETE ON dlq
  FOR EACH ROW WHEN (OLD.body_id IS NOT NULL) EXECUTE FUNCTION body_unref();
