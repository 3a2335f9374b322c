-- An attempt's ACTIVE event and its outcome (DELIVERED, ERROR) written together share one row:
-- the outcome's, with the ACTIVE event's time in active_at. Lists return such a row as two
-- events, the ACTIVE just before the outcome (eventList). One row less per delivery; an ACTIVE
-- written apart (a slow attempt, or one whose lease was lost) is a row of its own, as before.
ALTER TABLE events ADD COLUMN active_at INTEGER;
