-- An incremental look (docs/experiments.md, "Incremental looks") folds the notifications of an
-- experiment that have events since its previous look. It found them through the log-order index,
-- which holds every app's events: a look read every event appended since the previous one, all
-- apps' (2,247,919 of another app took 0.8-1.0 s; at 150 million events a day and hourly looks,
-- about 6 million a look, for each running experiment; BENCHMARKS.md, "2026-12-07 19:20-19:32 UTC").
-- This index holds only the events with an experiment tag, by app, experiment and transaction, so
-- that a look reads its own experiment's new events. It costs ingestion an index entry for each
-- tagged event, none for the others.
--
-- Made ON ONLY the log, so that no partition holding many events is locked against appends while
-- it is built: a partition attached from now on gets it with its ATTACH (empty, at once), and one
-- that holds 2,000,000 events or fewer gets it here (seconds). A larger one keeps without it (a
-- look reads it as before, and the log's index stays marked invalid) until retention drops it.
CREATE INDEX events_experiment_by_transaction ON ONLY events (app_id, experiment_id, transaction_id)
    WHERE experiment_id IS NOT NULL;

DO $$
DECLARE
    part record;
    small boolean;
    index_name text;
BEGIN
    FOR part IN
        SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent = 'events'::regclass ORDER BY c.relname
    LOOP
        -- Counted up to the bound, not estimated: the open week's statistics may be old
        -- (migration 021 keeps insert-driven vacuum away from it).
        EXECUTE format('SELECT count(*) <= 2000000 FROM (SELECT 1 FROM %I LIMIT 2000001) AS rows', part.relname) INTO small;
        CONTINUE WHEN NOT small;
        index_name := left(part.relname, 40) || '_experiment_by_transaction';
        EXECUTE format('CREATE INDEX %I ON %I (app_id, experiment_id, transaction_id) WHERE experiment_id IS NOT NULL',
                       index_name, part.relname);
        EXECUTE format('ALTER INDEX events_experiment_by_transaction ATTACH PARTITION %I', index_name);
    END LOOP;
END
$$;
