-- The workflow run a message belongs to (`spec.workflow.runId`), as a column: the logs show a
-- running run's messages that are not final, also those its history does not name (a
-- `context.call` on its way to the third party, the callback bringing its response back, a
-- wait's timeout before it is due), and find them by this column instead of a scan of the
-- messages table. NULL on every other message; the index is partial, so a plain message costs
-- no index entry (the messages table holds every waiting message: issue 16).
-- PostgreSQL mirrors this in storage/postgres/migrations/018_message_workflow_run.sql.
ALTER TABLE messages ADD COLUMN workflow_run_id TEXT;

UPDATE messages SET workflow_run_id = json_extract(spec, '$.workflow.runId')
  WHERE json_extract(spec, '$.workflow.runId') IS NOT NULL;

CREATE INDEX messages_workflow_run ON messages (workflow_run_id)
  WHERE workflow_run_id IS NOT NULL;
