-- The log's occurred_at BRIN index (015) summarized each range once it filled (autosummarize):
-- an insert that crosses into a new range asks autovacuum to summarize the one before. Under
-- sustained ingestion that did harm twice over (BENCHMARKS.md, "2026-12-05 06:25-07:33 UTC"):
--   - the requests overflow autovacuum's work-item queue, and each refused one is logged at LOG
--     level with the whole append statement: 10,864 lines, 20.8 MB of server log in 10 minutes
--     at 51,500 events/s;
--   - the request a worker does take up locks the week's partition, which another worker is
--     vacuuming, and after deadlock_timeout cancels that vacuum ("canceling autovacuum task"),
--     every time: the partition's vacuum never finished, so most of its ranges stayed
--     unsummarized anyway.
-- Instead vacuum summarizes every full range when it runs (insert-driven, once the rows inserted
-- since the last one reach a fifth of those before: up to a sixth of the partition), and engage's
-- partition maintenance summarizes what is left in every partition at start and then hourly
-- (OccurredAtSummaries, with engage_summarize_occurred_at below): a week that closed since its
-- last vacuum, a restored one. It waits for a partition's lock at most half of deadlock_timeout,
-- so it never cancels a vacuum: a partition busy now is summarized at a later pass.
--
-- A partitioned index's options cannot be altered, so each partition's index is, in the order of
-- the partitions' bounds, and the function that makes partitions gives each new one its own index
-- without autosummarize before attaching it (ATTACH adopts a matching index instead of cloning the
-- log's). Altering the option locks each index ACCESS EXCLUSIVE until the migration commits: a
-- catalog change, so appends wait only for this short transaction, and the migration waits for
-- the transactions that use the log's indexes (an experiment's replay, a prune or restore, a
-- projector batch; a pg_dump does not) a second at a time (the migrator's lock_timeout, as for 018).
DO $$
DECLARE
    partition_index regclass;
BEGIN
    FOR partition_index IN
        SELECT i.inhrelid::regclass
        FROM pg_inherits i
        JOIN pg_index x ON x.indexrelid = i.inhrelid
        JOIN event_partitions p ON p.name = x.indrelid::regclass::text
        WHERE i.inhparent = 'events_occurred_at'::regclass
        ORDER BY p.lower, p.name
    LOOP
        EXECUTE format('ALTER INDEX %s SET (autosummarize = off)', partition_index);
    END LOOP;
END
$$;

COMMENT ON INDEX events_occurred_at IS
    'Summarized by vacuum and by engage''s partition maintenance: each partition''s index has autosummarize off (migration 020); this definition''s option is not used.';

-- As in 010, with the occurred_at index made on the empty table first, and only the table's creation
-- taken as another session's race (an error of the index or the attachment is no such race).
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
        EXECUTE format('CREATE TABLE %I (LIKE events INCLUDING DEFAULTS INCLUDING STORAGE)', partition_name);
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

-- Summarizes the ranges of the partition's occurred_at index that have none, from heap block
-- `from_block` on, range by range, until `budget` has passed (one range at least); returns the
-- ranges summarized and the block to go on from, NULL once it reached the partition's end.
-- brin_summarize_new_values does the whole partition in one statement: stopped inside a range (a
-- time limit, a shutdown), it leaves that range's placeholder, which no later summarization or
-- vacuum replaces and every scan reads whole (checked on PostgreSQL 15). A budget of seconds also
-- keeps the partition's lock short: autovacuum skips a partition locked so, and a prune's detach
-- waits for it. The partition is locked by name first, so a partition a prune dropped after the
-- caller listed it raises undefined_table (42P01), not an error about a vanished relation's OID.
CREATE FUNCTION engage_summarize_occurred_at(partition_name text, from_block bigint, budget interval,
                                             OUT summarized int, OUT next_block bigint)
LANGUAGE plpgsql AS $$
DECLARE
    deadline timestamptz := clock_timestamp() + budget;
    partition regclass;
    occurred_at_index regclass;
    pages_per_range int;
    pages bigint;
    block bigint := from_block;
BEGIN
    summarized := 0;
    EXECUTE format('LOCK TABLE %I IN SHARE UPDATE EXCLUSIVE MODE', partition_name);
    -- The caller's lock_timeout is for the partition's lock: a timeout on a lock taken inside a
    -- range's summarization (the index's extension, shared with appends) would leave a placeholder.
    PERFORM set_config('lock_timeout', '0', true);
    partition := to_regclass(quote_ident(partition_name));
    SELECT x.indexrelid::regclass INTO occurred_at_index
    FROM pg_index x JOIN pg_inherits i ON i.inhrelid = x.indexrelid
    WHERE x.indrelid = partition AND i.inhparent = 'events_occurred_at'::regclass;
    IF occurred_at_index IS NULL THEN
        RETURN;
    END IF;
    -- The index's own setting (015 and this migration make it with the default); an ALTER INDEX
    -- of pages_per_range would change this without changing the index, and skip ranges.
    SELECT coalesce((SELECT o.option_value::int FROM pg_options_to_table(c.reloptions) o WHERE o.option_name = 'pages_per_range'), 128)
    INTO pages_per_range
    FROM pg_class c WHERE c.oid = occurred_at_index;
    pages := pg_relation_size(partition) / current_setting('block_size')::int;
    block := block - block % pages_per_range;
    WHILE block < pages LOOP
        summarized := summarized + brin_summarize_range(occurred_at_index, block);
        block := block + pages_per_range;
        IF block < pages AND clock_timestamp() >= deadline THEN
            next_block := block;
            RETURN;
        END IF;
    END LOOP;
END
$$;
