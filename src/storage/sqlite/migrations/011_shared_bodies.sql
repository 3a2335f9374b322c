-- Bodies stored once (issue 21, point 2). Mirrors storage/postgres/migrations/011_shared_bodies.sql.
--
-- A body longer than 4 KiB (INLINE_MAX_BYTES in storage/sql/bodies.ts) is stored once in
-- `bodies` and referenced by `body_id` from every row that carries it: the fan-out messages of
-- one publish, their CREATED events and their DLQ entries. Shorter bodies stay inline in the
-- rows' own `body` column: a row already costs a few hundred bytes, so sharing them would save
-- little and add two writes per publish on the hot path. A row with `body_id` keeps an empty
-- `body` (messages, dlq: the column is NOT NULL) or NULL (events).
--
-- `head` holds the first 64 KiB (HEAD_BYTES), which is what lists show by default (bodyCut):
-- a list reads the head, never the whole body. `data` holds the whole body when it is longer
-- than the head, else NULL (the head is then the whole body). `head` comes before `data`, so
-- reading it walks only the first overflow pages of the record.
CREATE TABLE bodies (
  id   TEXT PRIMARY KEY,
  size INTEGER NOT NULL,
  head BLOB NOT NULL,
  data BLOB
);

-- How many rows reference each body, kept by the triggers below on every path that adds or
-- removes rows (publish, outcomes, cancel, retention, DLQ delete and eviction, account
-- deletion). Kept apart from `bodies`: SQLite rewrites a whole record on UPDATE, which for a
-- 10 MiB body would mean rewriting 10 MiB on every reference taken or dropped.
-- A count of 0 does not delete the body at once: the same transaction may still add a
-- reference (an outcome deletes the message, then inserts its DLQ entry), and SQLite has no
-- deferred triggers. The pruner deletes bodies at 0 (bodyDeleteUnreferenced), in the same
-- transaction as their count row, so a crash at any point leaves either both or neither.
CREATE TABLE body_refs (
  body_id TEXT PRIMARY KEY,
  refs    INTEGER NOT NULL
);
CREATE INDEX body_refs_unreferenced ON body_refs (body_id) WHERE refs <= 0;

ALTER TABLE messages ADD COLUMN body_id TEXT;
ALTER TABLE events ADD COLUMN body_id TEXT;
ALTER TABLE dlq ADD COLUMN body_id TEXT;

-- Existing rows: every body past the inline size moves to `bodies`. A CREATED event whose
-- message is still waiting shares the message's body (they are the same bytes); other events and
-- DLQ entries get one body each.
INSERT INTO bodies (id, size, head, data)
  SELECT 'm' || id, length(body), substr(body, 1, 65536),
         CASE WHEN length(body) > 65536 THEN body END
  FROM messages WHERE length(body) > 4096;
UPDATE messages SET body_id = 'm' || id, body = X'' WHERE length(body) > 4096;

UPDATE events SET body_id = 'm' || message_id, body = NULL
  WHERE state = 'CREATED' AND length(body) > 4096
    AND EXISTS (SELECT 1 FROM messages m WHERE m.id = events.message_id AND m.body_id IS NOT NULL);
INSERT INTO bodies (id, size, head, data)
  SELECT 'e' || id, length(body), substr(body, 1, 65536),
         CASE WHEN length(body) > 65536 THEN body END
  FROM events WHERE length(body) > 4096;
UPDATE events SET body_id = 'e' || id, body = NULL WHERE length(body) > 4096;

INSERT INTO bodies (id, size, head, data)
  SELECT 'd' || dlq_id, length(body), substr(body, 1, 65536),
         CASE WHEN length(body) > 65536 THEN body END
  FROM dlq WHERE length(body) > 4096;
UPDATE dlq SET body_id = 'd' || dlq_id, body = X'' WHERE length(body) > 4096;

INSERT INTO body_refs (body_id, refs)
  SELECT body_id, count(*) FROM (
    SELECT body_id FROM messages WHERE body_id IS NOT NULL
    UNION ALL SELECT body_id FROM events WHERE body_id IS NOT NULL
    UNION ALL SELECT body_id FROM dlq WHERE body_id IS NOT NULL
  ) GROUP BY body_id;

-- The counts. A row is inserted only after its body (storage/sqlite/sqlite-bodies.ts), so the
-- count row exists; an UPDATE of a missing one would change nothing and the body would then be
-- freed under the row, hence the RAISE.
CREATE TRIGGER messages_body_ref AFTER INSERT ON messages WHEN NEW.body_id IS NOT NULL BEGIN
  SELECT RAISE(ABORT, 'body not stored') WHERE NOT EXISTS (SELECT 1 FROM body_refs WHERE body_id = NEW.body_id);
  UPDATE body_refs SET refs = refs + 1 WHERE body_id = NEW.body_id;
END;
CREATE TRIGGER messages_body_unref AFTER DELETE ON messages WHEN OLD.body_id IS NOT NULL BEGIN
  UPDATE body_refs SET refs = refs - 1 WHERE body_id = OLD.body_id;
END;
CREATE TRIGGER events_body_ref AFTER INSERT ON events WHEN NEW.body_id IS NOT NULL BEGIN
  SELECT RAISE(ABORT, 'body not stored') WHERE NOT EXISTS (SELECT 1 FROM body_refs WHERE body_id = NEW.body_id);
  UPDATE body_refs SET refs = refs + 1 WHERE body_id = NEW.body_id;
END;
CREATE TRIGGER events_body_unref AFTER DELETE ON events WHEN OLD.body_id IS NOT NULL BEGIN
  UPDATE body_refs SET refs = refs - 1 WHERE body_id = OLD.body_id;
END;
CREATE TRIGGER dlq_body_ref AFTER INSERT ON dlq WHEN NEW.body_id IS NOT NULL BEGIN
  SELECT RAISE(ABORT, 'body not stored') WHERE NOT EXISTS (SELECT 1 FROM body_refs WHERE body_id = NEW.body_id);
  UPDATE body_refs SET refs = refs + 1 WHERE body_id = NEW.body_id;
END;
CREATE TRIGGER dlq_body_unref AFTER DELETE ON dlq WHEN OLD.body_id IS NOT NULL BEGIN
  UPDATE body_refs SET refs = refs - 1 WHERE body_id = OLD.body_id;
END;
