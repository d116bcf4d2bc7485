-- The log becomes partitioned by the week (Monday to Monday, UTC) each event was recorded in, so
-- that retention drops whole partitions (engage log prune) instead of deleting rows one by one,
-- and event ids move into `event_ids`, the idempotency key of every event the log holds
-- (docs/design.md, "Retention"). Weeks, not days: a query that cannot prune partitions by time
-- (tailing by transaction id) plans and locks every partition, and a log kept for years must
-- not hold thousands of them.
--
-- A unique index on a partitioned table must include the partition key, and a retry is recorded
-- later than its original: keyed by (event_id, recorded_at), a retry on another day would be
-- stored again. So the key lives in a table of its own, unpartitioned, written in the same
-- transaction as the events (EventStore.append) and pruned with them.
--
-- The existing log is not copied: the old table becomes the partition `events_legacy`, holding
-- everything recorded before next Monday (UTC); weekly partitions follow. Pruning deletes from it in
-- batches while it straddles the cut and drops it once it is wholly older. Rows keep their
-- position and transaction_id, so readers' checkpoints stay valid; the owner and every grant on
-- the old table carry over. The ids are copied once into `event_ids` (about 40 bytes per event).
--
-- Upgrading: stop every engage process of the old version first (they would store events
-- without their id in `event_ids`). The migration holds an exclusive lock on the log while it
-- copies the ids and checks the partition bound (one pass over the table).

ALTER TABLE events RENAME TO events_legacy;

-- Objects of an operator's own on the old table would now sit on a partition: stop (rolled back
-- whole) and say which, as 008 does.
DO $$
DECLARE
    unknown text;
BEGIN
    SELECT string_agg(kind || ' ' || name, ', ') INTO unknown FROM (
        SELECT 'index' AS kind, c.relname::text AS name
        FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
        WHERE i.indrelid = 'events_legacy'::regclass
          AND c.relname NOT IN ('events_pkey', 'events_log_order', 'events_stream', 'events_experiment_replay',
                                'events_recorded_at')
        UNION ALL
        SELECT 'trigger', tgname::text FROM pg_trigger
        WHERE tgrelid = 'events_legacy'::regclass AND NOT tgisinternal AND tgname <> 'events_appended'
        UNION ALL
        SELECT 'policy', polname::text FROM pg_policy WHERE polrelid = 'events_legacy'::regclass
        UNION ALL
        SELECT 'publication', p.pubname::text
        FROM pg_publication_rel r JOIN pg_publication p ON p.oid = r.prpubid
        WHERE r.prrelid = 'events_legacy'::regclass
        UNION ALL
        SELECT 'view', v.oid::regclass::text
        FROM pg_depend d JOIN pg_rewrite w ON w.oid = d.objid JOIN pg_class v ON v.oid = w.ev_class
        WHERE d.refobjid = 'events_legacy'::regclass AND d.classid = 'pg_rewrite'::regclass AND v.oid <> d.refobjid
    ) AS found;
    IF unknown IS NOT NULL THEN
        RAISE EXCEPTION 'events has objects engage does not know: %; drop them, migrate, then create them on the new table', unknown;
    END IF;
END
$$;

-- The idempotency key: one row per event in the log. Filled in the log's order, so the ids of
-- one day lie together in the heap, which keeps pruning them local.
CREATE TABLE event_ids (event_id uuid NOT NULL);
INSERT INTO event_ids SELECT event_id FROM events_legacy ORDER BY transaction_id, position;
ALTER TABLE event_ids ADD CONSTRAINT event_ids_pkey PRIMARY KEY (event_id);
COMMENT ON TABLE event_ids IS
    'The idempotency key: the id of every event in the log, written with it (engage log prune removes both).';

ALTER TABLE events_legacy DROP CONSTRAINT events_pkey;
DROP TRIGGER events_appended ON events_legacy;
ALTER INDEX events_log_order RENAME TO events_legacy_log_order;
ALTER INDEX events_stream RENAME TO events_legacy_stream;
ALTER INDEX events_experiment_replay RENAME TO events_legacy_experiment_replay;
ALTER INDEX events_recorded_at RENAME TO events_legacy_recorded_at;

-- The same columns, NOT NULL constraints, defaults and comments as before.
CREATE TABLE events (LIKE events_legacy INCLUDING DEFAULTS INCLUDING COMMENTS INCLUDING STORAGE)
    PARTITION BY RANGE (recorded_at);

-- Each partition gets these; the old table's own, identical, are attached to them below.
CREATE INDEX events_log_order ON events (transaction_id, position);
CREATE INDEX events_stream ON events (app_id, notification_id);
CREATE INDEX events_experiment_replay ON events (app_id, experiment_id, notification_id)
    WHERE experiment_id IS NOT NULL;
-- Rows arrive in recorded_at order: the block-range index is next to free, and serves the
-- archiving of single days, the legacy partition's batched deletes and the dashboards' time ranges.
CREATE INDEX events_recorded_at ON events USING brin (recorded_at);

CREATE TRIGGER events_appended AFTER INSERT ON events
    FOR EACH STATEMENT EXECUTE FUNCTION engage_notify_events_appended();

COMMENT ON TABLE events IS
    'The immutable event log, partitioned by the UTC week of recorded_at; event ids are unique through event_ids. Read in (transaction_id, position) order.';

-- The same owner, and whoever could read or write the old table can do the same with the log.
DO $$
DECLARE
    old_table oid := 'events_legacy'::regclass;
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

-- Each partition's range as timestamps (the catalog keeps it as an expression):
-- `lower` is -infinity for a partition that starts at MINVALUE.
CREATE VIEW event_partitions AS
SELECT c.relname::text AS name,
       CASE WHEN bound ~ '^FOR VALUES FROM \(MINVALUE\)' THEN '-infinity'::timestamptz
            ELSE (regexp_match(bound, '^FOR VALUES FROM \(''([^'']*)''\)'))[1]::timestamptz END AS lower,
       (regexp_match(bound, ' TO \(''([^'']*)''\)$'))[1]::timestamptz AS upper
FROM pg_inherits i
JOIN pg_class c ON c.oid = i.inhrelid
CROSS JOIN LATERAL pg_get_expr(c.relpartbound, c.oid) AS bound
WHERE i.inhparent = 'events'::regclass;

-- Creates the partition of the week (UTC, from Monday) holding the day `day`, named after its
-- Monday, unless a partition already covers that day. The table is made empty and then attached,
-- which locks the log only in SHARE UPDATE EXCLUSIVE mode (CREATE TABLE ... PARTITION OF would
-- block every append while it waits for its lock).
CREATE FUNCTION engage_ensure_event_partition(day date) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    monday date := date_trunc('week', day)::date;
    partition_name text := format('events_%s', to_char(monday, 'YYYY_MM_DD'));
    lower_bound timestamptz := monday::timestamp AT TIME ZONE 'UTC';
    day_start timestamptz := day::timestamp AT TIME ZONE 'UTC';
BEGIN
    IF to_regclass(partition_name) IS NOT NULL
       OR EXISTS (SELECT 1 FROM event_partitions p WHERE p.lower <= day_start AND day_start < p.upper) THEN
        RETURN false;
    END IF;
    EXECUTE format('CREATE TABLE %I (LIKE events INCLUDING DEFAULTS INCLUDING STORAGE)', partition_name);
    EXECUTE format('ALTER TABLE events ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)',
                   partition_name, lower_bound, lower_bound + interval '7 days');
    RETURN true;
EXCEPTION
    -- Another session made it first.
    WHEN duplicate_table OR unique_violation THEN RETURN false;
END
$$;

-- The partitions holding today and the next `days_ahead` days (UTC); how many were created.
-- Called after every migration run (sql/views) and every hour by engage serve and engage
-- scheduler, and an append that finds no partition for its day creates it and retries.
CREATE FUNCTION engage_ensure_event_partitions(days_ahead int DEFAULT 7) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
    today date := (now() AT TIME ZONE 'UTC')::date;
    created int := 0;
BEGIN
    FOR step IN 0 .. days_ahead LOOP
        IF engage_ensure_event_partition(today + step) THEN
            created := created + 1;
        END IF;
    END LOOP;
    RETURN created;
END
$$;

-- The old table takes everything recorded before next Monday (or after its latest row's week, if
-- a clock ran ahead), so that weeks start where it ends; an empty one is not kept.
DO $$
DECLARE
    next_monday timestamptz := (date_trunc('week', now() AT TIME ZONE 'UTC') + interval '7 days') AT TIME ZONE 'UTC';
    latest timestamptz;
    upper_bound timestamptz;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM events_legacy) THEN
        DROP TABLE events_legacy;
        RETURN;
    END IF;
    SELECT max(recorded_at) INTO latest FROM events_legacy;
    upper_bound := greatest(next_monday, (date_trunc('week', latest AT TIME ZONE 'UTC') + interval '7 days') AT TIME ZONE 'UTC');
    EXECUTE format('ALTER TABLE events ATTACH PARTITION events_legacy FOR VALUES FROM (MINVALUE) TO (%L)', upper_bound);
END
$$;

SELECT engage_ensure_event_partitions(7);

-- What engage log prune removed, one row per UTC day, so that a rebuild of the read models can
-- tell that the log no longer holds those days (and engage log restore, that they came back).
CREATE TABLE log_pruned_days (
    day              date        PRIMARY KEY,
    events           bigint      NOT NULL,
    pruned_at        timestamptz NOT NULL DEFAULT now(),
    -- The archive file of the day (its name and SHA-256), or NULL when pruned without --archive.
    archive_file     text,
    archive_sha256   text,
    -- When engage log restore loaded the day back; a later prune of the day clears it.
    restored_at      timestamptz,
    -- When a rebuild of the read models ran without the day (engage projections rebuild --discard-pruned).
    rebuilt_without_at timestamptz
);
