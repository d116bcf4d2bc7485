-- The partition maintenance's hourly summaries (020) take the log's recorded_at BRIN index too.
--
-- The open week's partition is no longer vacuumed for its inserts (021), and its recorded_at
-- index, made without autosummarize (010), was summarized by those vacuums alone. A range with no
-- summary matches every query, so the dashboards' panels filtered on recorded_at (ingestion:
-- "Events recorded per minute by type", "Recording delay per minute"; every refresh, 30 s by
-- default) read the whole week so far instead of the hours they show: six days of events on a
-- Sunday evening, for a panel of six hours.
--
-- So summarizing a partition's occurred_at ranges summarizes the recorded_at ranges over the same
-- heap blocks in the same step: the step still stops only between ranges of either index (each
-- recorded_at range inside the step's blocks is done whole), and `summarized` still counts the
-- occurred_at ranges.
CREATE OR REPLACE FUNCTION engage_summarize_occurred_at(partition_name text, from_block bigint, budget interval,
                                                        OUT summarized int, OUT next_block bigint)
LANGUAGE plpgsql AS $$
DECLARE
    deadline timestamptz := clock_timestamp() + budget;
    partition regclass;
    occurred_at_index regclass;
    recorded_at_index regclass;
    pages_per_range int;
    recorded_pages_per_range int;
    pages bigint;
    block bigint := from_block;
    recorded_block bigint;
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
    SELECT x.indexrelid::regclass INTO recorded_at_index
    FROM pg_index x JOIN pg_inherits i ON i.inhrelid = x.indexrelid
    WHERE x.indrelid = partition AND i.inhparent = 'events_recorded_at'::regclass;
    -- The indexes' own settings (made with the default); an ALTER INDEX of pages_per_range would
    -- change this without changing the index, and skip ranges.
    SELECT coalesce((SELECT o.option_value::int FROM pg_options_to_table(c.reloptions) o WHERE o.option_name = 'pages_per_range'), 128)
    INTO pages_per_range
    FROM pg_class c WHERE c.oid = occurred_at_index;
    SELECT coalesce((SELECT o.option_value::int FROM pg_options_to_table(c.reloptions) o WHERE o.option_name = 'pages_per_range'), 128)
    INTO recorded_pages_per_range
    FROM pg_class c WHERE c.oid = recorded_at_index;
    pages := pg_relation_size(partition) / current_setting('block_size')::int;
    block := block - block % pages_per_range;
    WHILE block < pages LOOP
        summarized := summarized + brin_summarize_range(occurred_at_index, block);
        IF recorded_at_index IS NOT NULL THEN
            recorded_block := block - block % recorded_pages_per_range;
            WHILE recorded_block < least(block + pages_per_range, pages) LOOP
                PERFORM brin_summarize_range(recorded_at_index, recorded_block);
                recorded_block := recorded_block + recorded_pages_per_range;
            END LOOP;
        END IF;
        block := block + pages_per_range;
        IF block < pages AND clock_timestamp() >= deadline THEN
            next_block := block;
            RETURN;
        END IF;
    END LOOP;
END
$$;
