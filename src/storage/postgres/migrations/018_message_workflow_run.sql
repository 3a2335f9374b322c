-- Mirrors storage/sqlite/migrations/018_message_workflow_run.sql: the workflow run a message
-- belongs to as a column, NULL on every other message, with a partial index, so the logs find a
-- run's messages that are not final without a scan of the messages table. Added without a
-- default, so no row is rewritten; the UPDATE writes only the rows of workflow messages.
ALTER TABLE messages ADD COLUMN workflow_run_id TEXT;

-- Unlike SQLite's json_extract, PostgreSQL's JSON parser refuses a lone UTF-16 surrogate escape
-- (`\ud800`), which a spec written by JSON.stringify may hold in a string: the run id is read
-- with a regular expression instead. `"runId":"` occurs in a spec only as its workflow's run id
-- (a quote inside a string value is escaped, header maps hold arrays), and a run id is
-- `[A-Za-z0-9_.-]` (core/workflow.ts).
UPDATE messages SET workflow_run_id = substring(spec FROM '"runId":"([A-Za-z0-9_.-]+)"')
  WHERE spec LIKE '%"runId":"%';

CREATE INDEX messages_workflow_run ON messages (workflow_run_id)
  WHERE workflow_run_id IS NOT NULL;
