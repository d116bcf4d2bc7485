-- A week's partition ends at the next Monday midnight UTC, whatever the session's TimeZone.
--
-- engage_ensure_event_partition (migrations 010, 020, 021) ended a week at its start plus
-- interval '7 days', added to a timestamptz: PostgreSQL adds days in the session's TimeZone,
-- keeping its wall-clock time, and engage sets none, so a server whose time zone keeps summer time
-- (initdb takes the operating system's) made a week that holds the change an hour short or long.
-- In spring the log then had no partition for the last hour before Monday (every append of that
-- hour failed, the retry making nothing: the day was "covered"); in autumn the next week could not
-- be attached over the hour it overlapped, and from that Monday on every append failed.
--
-- The function now computes both bounds in UTC, and makes the part of a day that no partition
-- covers rather than the whole week: a week whose Monday an older partition still reaches into
-- (autumn) starts where that one ends, and an hour left between two partitions (spring) gets a
-- partition of its own, named after its start. A partition of a whole week keeps its Monday's
-- name.
CREATE OR REPLACE FUNCTION engage_ensure_event_partition(day date) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    monday date := date_trunc('week', day)::date;
    week_name text := format('events_%s', to_char(monday, 'YYYY_MM_DD'));
    week_start timestamptz := monday::timestamp AT TIME ZONE 'UTC';
    week_end timestamptz := (monday + 7)::timestamp AT TIME ZONE 'UTC';
    day_end timestamptz := (day + 1)::timestamp AT TIME ZONE 'UTC';
    uncovered timestamptz := day::timestamp AT TIME ZONE 'UTC';
    covered_until timestamptz;
    gap_start timestamptz;
    gap_end timestamptz;
    partition_name text;
    created boolean := false;
BEGIN
    LOOP
        -- The first moment of the day from `uncovered` on that no partition takes.
        LOOP
            SELECT max(p.upper) INTO covered_until FROM event_partitions p
            WHERE p.lower <= uncovered AND uncovered < p.upper;
            EXIT WHEN covered_until IS NULL;
            uncovered := covered_until;
        END LOOP;
        EXIT WHEN uncovered >= day_end;
        -- Its gap, from the partition before it to the one after, within the week.
        SELECT greatest(week_start, max(p.upper)) INTO gap_start FROM event_partitions p WHERE p.upper <= uncovered;
        gap_start := coalesce(gap_start, week_start);
        SELECT least(week_end, min(p.lower)) INTO gap_end FROM event_partitions p WHERE p.lower > uncovered;
        gap_end := coalesce(gap_end, week_end);
        partition_name := CASE WHEN to_regclass(week_name) IS NULL THEN week_name
                               ELSE format('events_%s', to_char(gap_start AT TIME ZONE 'UTC', 'YYYY_MM_DD_HH24MISS')) END;
        BEGIN
            EXECUTE format('CREATE TABLE %I (LIKE events INCLUDING DEFAULTS INCLUDING STORAGE)%s', partition_name,
                           CASE WHEN gap_end > now() THEN ' WITH (autovacuum_vacuum_insert_threshold = -1)' ELSE '' END);
        EXCEPTION
            -- Another session made it first.
            WHEN duplicate_table OR unique_violation THEN RETURN created;
        END;
        EXECUTE format('CREATE INDEX %I ON %I USING brin (occurred_at timestamptz_minmax_multi_ops) WITH (autosummarize = off)',
                       partition_name || '_occurred_at_idx', partition_name);
        EXECUTE format('ALTER TABLE events ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)',
                       partition_name, gap_start, gap_end);
        created := true;
        uncovered := gap_end;
    END LOOP;
    RETURN created;
END
$$;
