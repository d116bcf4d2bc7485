-- The log's partition of the week being appended to is no longer vacuumed for its inserts; once
-- its week is over, autovacuum makes one pass over it.
--
-- A partition of the log only receives inserts: vacuum has nothing to remove from it. An
-- insert-driven vacuum (autovacuum_vacuum_insert_threshold, once the rows inserted since the last
-- reach a fifth of the table) marks the new pages all-visible, freezes rows old enough, and
-- summarizes both BRIN indexes, reading the new pages three times. Under sustained ingestion it
-- came every one to two minutes, the passes growing with the week (25 to 99 s in 10 minutes at
-- 28,800 events/s), a tenth of a core while it ran and 16.5 GiB read and 5 GiB of pages dirtied in
-- all, beside the appends and the projector at their peak (BENCHMARKS.md, "2026-12-06 19:40-21:10
-- UTC"; the projector's lag there did not change measurably). Nothing engage runs needs the open week's
-- visibility map: its readers (the projector, an experiment's replay, the lag's count) read rows
-- that are too new to be all-visible anyway, and the partition maintenance summarizes the
-- occurred_at ranges every hour (migration 020).
--
-- So a partition whose week has not ended is made with autovacuum_vacuum_insert_threshold = -1 (no
-- insert-driven vacuum; vacuums for dead rows, which a refused append leaves, and against
-- wraparound still run), and engage's partition maintenance resets it an hour after the week's
-- end (engage_reopen_insert_vacuum below): the inserts counted since then make autovacuum vacuum
-- the closed week once. Whatever resets the server's statistics during the week (a crash, a
-- failover to a standby, pg_stat_reset, pg_upgrade) loses that count: the closed week then waits
-- for the vacuum against wraparound, as every insert-only table did before PostgreSQL 13. ANALYZE
-- is not affected. The open week's recorded_at BRIN index (never autosummarized) stays
-- unsummarized until that pass; only a prune or restore of days inside the week reads by it.
--
-- Altering a partition's option locks it SHARE UPDATE EXCLUSIVE (as vacuum does), which appends do
-- not wait for. A running vacuum of the open week holds that lock: the migration's wait (the
-- migrator's lock_timeout, a second at a time) may outlast deadlock_timeout and cancel that vacuum,
-- which this migration makes needless anyway.
DO $$
DECLARE
    open_partition text;
BEGIN
    FOR open_partition IN
        SELECT name FROM event_partitions WHERE upper > now() ORDER BY lower, name
    LOOP
        EXECUTE format('ALTER TABLE %I SET (autovacuum_vacuum_insert_threshold = -1)', open_partition);
    END LOOP;
END
$$;

-- As in 020, with a week that has not ended made without insert-driven vacuum.
CREATE OR REPLACE FUNCTION engage_ensure_event_partition(day date) RETURNS boolean LANGUAGE plpgsql AS $$
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
    BEGIN
        EXECUTE format('CREATE TABLE %I (LIKE events INCLUDING DEFAULTS INCLUDING STORAGE)%s', partition_name,
                       CASE WHEN lower_bound + interval '7 days' > now()
                            THEN ' WITH (autovacuum_vacuum_insert_threshold = -1)' ELSE '' END);
    EXCEPTION
        -- Another session made it first.
        WHEN duplicate_table OR unique_violation THEN RETURN false;
    END;
    EXECUTE format('CREATE INDEX %I ON %I USING brin (occurred_at timestamptz_minmax_multi_ops) WITH (autosummarize = off)',
                   partition_name || '_occurred_at_idx', partition_name);
    EXECUTE format('ALTER TABLE events ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)',
                   partition_name, lower_bound, lower_bound + interval '7 days');
    RETURN true;
END
$$;

-- Gives back insert-driven vacuum to every partition whose week ended before `ended_before` and
-- that is still without it, one row per partition: `reopened`; `busy` when its lock is not granted
-- within the caller's lock_timeout (a vacuum or a summarization holds it), tried again at the next
-- call; `not-owner` when the role does not own it (another role ran the migrations), which the
-- caller reports.
CREATE FUNCTION engage_reopen_insert_vacuum(ended_before timestamptz, OUT partition_name text, OUT outcome text)
RETURNS SETOF record LANGUAGE plpgsql AS $$
DECLARE
    closed_partition regclass;
BEGIN
    FOR closed_partition IN
        SELECT c.oid::regclass
        FROM pg_inherits i
        JOIN pg_class c ON c.oid = i.inhrelid
        JOIN event_partitions p ON p.name = c.relname::text
        WHERE i.inhparent = 'events'::regclass
          AND p.upper <= ended_before
          AND EXISTS (SELECT 1 FROM pg_options_to_table(c.reloptions) o
                      WHERE o.option_name = 'autovacuum_vacuum_insert_threshold' AND o.option_value::int = -1)
        ORDER BY p.lower, p.name
    LOOP
        partition_name := closed_partition::text;
        BEGIN
            EXECUTE format('ALTER TABLE %s RESET (autovacuum_vacuum_insert_threshold)', closed_partition);
            outcome := 'reopened';
        EXCEPTION
            WHEN lock_not_available THEN outcome := 'busy';
            WHEN insufficient_privilege THEN outcome := 'not-owner';
        END;
        RETURN NEXT;
    END LOOP;
END
$$;
