-- Mirrors storage/sqlite/migrations/017_workflow_step_delivery.sql: what each history entry's
-- message was delivered with (retries, retry-delay expression, forwarded headers as JSON), for
-- the logs; NULL on the entries stored before. Columns added without a default, so no row is
-- rewritten.
ALTER TABLE workflow_steps ADD COLUMN retries INTEGER;
ALTER TABLE workflow_steps ADD COLUMN retry_delay TEXT;
ALTER TABLE workflow_steps ADD COLUMN headers TEXT;
