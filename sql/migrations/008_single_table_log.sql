-- The log becomes one table whose own unique index on event_id is the idempotency key.
--
-- Until now `events` was partitioned by month and a second table, `event_ids`, kept ids unique
-- across partitions: every event was written twice (two heaps, two COPY statements per commit).
-- One table with time-ordered ids is what lets a group commit be a single COPY that commits on
-- its own (docs/design.md, "Idempotency"). Retention by dropping month partitions was never
-- built; docs/design.md, "Retention", says how to prune now.
--
-- Upgrading: stop every engage process of the old version first (they write `event_ids`). The
-- copy holds an exclusive lock on the log while it runs and needs about twice the log's disk.
-- Rows keep their position and transaction_id, so readers' checkpoints stay valid; the owner and
-- every grant on the old table carry over.

ALTER TABLE events RENAME TO events_by_month;

-- Objects of an operator's own on the old table would not survive the copy: stop (rolled back
-- whole) and say which, rather than lose them silently. Views are refused by DROP TABLE below.
DO $$
DECLARE
    unknown text;
BEGIN
    SELECT string_agg(kind || ' ' || name, ', ') INTO unknown FROM (
        SELECT 'index' AS kind, c.relname::text AS name
        FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
        WHERE i.indrelid = 'events_by_month'::regclass
          AND c.relname NOT IN ('events_log_order', 'events_stream', 'events_experiment_replay')
        UNION ALL
        SELECT 'trigger', tgname::text FROM pg_trigger
        WHERE tgrelid = 'events_by_month'::regclass AND NOT tgisinternal AND tgname <> 'events_appended'
        UNION ALL
        SELECT 'policy', polname::text FROM pg_policy WHERE polrelid = 'events_by_month'::regclass
        UNION ALL
        SELECT 'publication', p.pubname::text
        FROM pg_publication_rel r JOIN pg_publication p ON p.oid = r.prpubid
        WHERE r.prrelid = 'events_by_month'::regclass
    ) AS found;
    IF unknown IS NOT NULL THEN
        RAISE EXCEPTION 'events has objects engage does not know: %; drop them, migrate, then create them on the new table', unknown;
    END IF;
END
$$;

DROP TRIGGER events_appended ON events_by_month;

-- The same columns, NOT NULL constraints, defaults and comments as 001 gave the old table.
CREATE TABLE events (LIKE events_by_month INCLUDING DEFAULTS INCLUDING COMMENTS INCLUDING STORAGE);

INSERT INTO events
SELECT position, transaction_id, event_id, app_id, notification_id, type, category, device_id,
       occurred_at, recorded_at, experiment_id, experiment_arm, payload
FROM events_by_month
ORDER BY transaction_id, position;

-- The same owner, and whoever could read or write the old table (a dashboard reader, say) can do
-- the same with the new. Read from the catalog's ACL, which lists every grant whoever migrates.
DO $$
DECLARE
    old_table oid := 'events_by_month'::regclass;
    entry record;
BEGIN
    EXECUTE format('ALTER TABLE events OWNER TO %I', (SELECT pg_get_userbyid(relowner) FROM pg_class WHERE oid = old_table));
    FOR entry IN
        SELECT acl.privilege_type, acl.grantee, acl.is_grantable
        FROM pg_class c, aclexplode(c.relacl) AS acl
        WHERE c.oid = old_table AND acl.grantee <> c.relowner
    LOOP
        EXECUTE format('GRANT %s ON events TO %s%s', entry.privilege_type,
                       CASE WHEN entry.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(pg_get_userbyid(entry.grantee)) END,
                       CASE WHEN entry.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END);
    END LOOP;
END
$$;

-- engage's views do not read the table. A view of an operator's own over it stops this migration
-- (rolled back whole) rather than being dropped silently: drop it, migrate, create it again.
DROP TABLE events_by_month;
DROP TABLE event_ids;
DROP FUNCTION engage_ensure_event_partitions(int, int);

ALTER TABLE events ADD CONSTRAINT events_pkey PRIMARY KEY (event_id);
CREATE INDEX events_log_order ON events (transaction_id, position);
CREATE INDEX events_stream ON events (app_id, notification_id);
CREATE INDEX events_experiment_replay ON events (app_id, experiment_id, notification_id)
    WHERE experiment_id IS NOT NULL;
-- Rows arrive in recorded_at order, so a block-range index is tiny and nearly free to keep; it
-- serves the ingestion dashboard's time ranges and retention's deletes by recorded_at.
CREATE INDEX events_recorded_at ON events USING brin (recorded_at);

CREATE TRIGGER events_appended AFTER INSERT ON events
    FOR EACH STATEMENT EXECUTE FUNCTION engage_notify_events_appended();

COMMENT ON TABLE events IS
    'The immutable event log. event_id is the idempotency key; read in (transaction_id, position) order.';
