-- What each history entry's message was delivered with, for the logs (the workflow SDK's step
-- log has `retries`, `retryDelay` and `headers`): the message's row is deleted once it is
-- delivered, so its entry keeps them. `headers` is the message's forwarded headers as JSON (the
-- protocol headers follow from the run). NULL on the entries stored before: the logs show the
-- run's settings for those (docs/workflows.md, "Logs").
-- PostgreSQL mirrors this in storage/postgres/migrations/017_workflow_step_delivery.sql.
ALTER TABLE workflow_steps ADD COLUMN retries INTEGER;
ALTER TABLE workflow_steps ADD COLUMN retry_delay TEXT;
ALTER TABLE workflow_steps ADD COLUMN headers TEXT;
