-- Not a view: the partitions of the log holding today and the next seven days (migration 010), made after
-- every migration run, so that a process that starts appending finds them; engage serve and
-- engage scheduler make them every hour as well. Skipped on a database migrated only partly.
DO $$
BEGIN
    IF to_regprocedure('engage_ensure_event_partitions(integer)') IS NOT NULL THEN
        PERFORM engage_ensure_event_partitions(7);
    END IF;
END
$$;
