-- Mirrors storage/sqlite/migrations/016_workflow_run_filters.sql: the host and path of a run's
-- URL (logs, bulk cancel), the response status of its DLQ entry (DLQ list) as columns, and an
-- index to find a run by a step's message id (logs). Unlike SQLite, the stored runs' URLs are
-- split with a regular expression (new runs take `new URL`'s parts, see `urlParts`).
ALTER TABLE workflow_runs ADD COLUMN url_host TEXT;
ALTER TABLE workflow_runs ADD COLUMN url_path TEXT;
ALTER TABLE workflow_runs ADD COLUMN dlq_response_status INTEGER;

UPDATE workflow_runs SET dlq_response_status = (doc::jsonb #>> '{dlq,responseStatus}')::integer
  WHERE dlq_id IS NOT NULL;

UPDATE workflow_runs SET
  url_host = lower(substring(url from '^[^:]*://([^/?#]*)')),
  url_path = COALESCE(NULLIF(substring(url from '^[^:]*://[^/?#]*([^?#]*)'), ''), '/');

CREATE INDEX workflow_steps_message ON workflow_steps (message_id);
