-- The workflow filters the SDK sends besides those of 007: the host and path of a run's URL
-- (logs, bulk cancel), the response status of its DLQ entry (DLQ list) and the message id of a
-- step (logs). host/path are columns as on messages and events (`urlParts`: `new URL`'s host,
-- with a port that is not the default, and pathname); the status is copied out of `doc`.
-- PostgreSQL mirrors this in storage/postgres/migrations/016_workflow_run_filters.sql (015 there
-- is PostgreSQL's own). Migration 015 is skipped here so the two drivers' versions stay equal.
ALTER TABLE workflow_runs ADD COLUMN url_host TEXT;
ALTER TABLE workflow_runs ADD COLUMN url_path TEXT;
ALTER TABLE workflow_runs ADD COLUMN dlq_response_status INTEGER;

UPDATE workflow_runs SET dlq_response_status = json_extract(doc, '$.dlq.responseStatus')
  WHERE dlq_id IS NOT NULL;

-- The runs stored before: split their URL (`scheme://host/path?query#fragment`) with string
-- functions, as SQLite has no URL parser (new runs take `new URL`'s parts: a URL with user info
-- or a default port, rare for a workflow endpoint, may differ). In steps: url_path holds the
-- text after `://` until it is split; SET expressions all read the row as it was before.
UPDATE workflow_runs SET url_path = substr(url, instr(url, '://') + 3);
UPDATE workflow_runs SET url_path = url_path || '/' WHERE instr(url_path, '/') = 0;
UPDATE workflow_runs SET
  url_host = lower(substr(url_path, 1, instr(url_path, '/') - 1)),
  url_path = substr(url_path, instr(url_path, '/'));
UPDATE workflow_runs SET url_path = substr(url_path, 1, instr(url_path, '?') - 1)
  WHERE instr(url_path, '?') > 0;
UPDATE workflow_runs SET url_path = substr(url_path, 1, instr(url_path, '#') - 1)
  WHERE instr(url_path, '#') > 0;

-- The logs' messageId filter finds a run by one of its steps' messages.
CREATE INDEX workflow_steps_message ON workflow_steps (message_id);
