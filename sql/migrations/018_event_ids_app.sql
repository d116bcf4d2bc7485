-- An event id is one key for every app (event_ids' primary key, 010). An event whose id another
-- app's event already holds was reported as a duplicate, which tells the client "stored earlier"
-- when nothing of its app was stored: the client then deleted it. The app beside each id lets
-- an append tell the two apart and reject such an event instead (docs/reliability.md).
--
-- NULL for ids stored before this migration (and by engage versions before it) and for the
-- experiment log's entries: those compare as the same app, never as another's (the behaviour
-- before). Adding a column without a default changes only the catalog: no rewrite, no wait.
ALTER TABLE event_ids ADD COLUMN app_id text;
COMMENT ON COLUMN event_ids.app_id IS
    'The app of the event holding the id (NULL: unknown, stored before migration 018); another app''s id is rejected, not a duplicate.';
