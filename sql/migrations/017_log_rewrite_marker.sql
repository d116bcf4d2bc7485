-- A prune or a restore changes the log below its readers' positions: events leave it, or come
-- back with their old transaction ids. A reader that keeps state folded by position, the
-- incremental experiment tallies (012), cannot see that, and a look folded while it happens
-- would store an analysis that is not the log's. This one row says a rewrite is under way.
--
-- `engage log prune` and `engage log restore` set it (LogRewrite.begin, a transaction of its own)
-- before their first change, and clear it in the transaction that drops the tallies after their
-- last (LogRewrite.end). Every begin raises `generation`: a look reads the row before it folds and
-- again in the transaction that stores its analysis, and stores nothing when a rewrite was under
-- way or began in between (docs/experiments.md, "Incremental looks"). A command that dies between
-- the two leaves the row set; the next prune or restore finds it and drops the tallies.
CREATE TABLE log_rewrite (
    singleton  boolean     PRIMARY KEY DEFAULT true CHECK (singleton),
    generation bigint      NOT NULL DEFAULT 0,
    -- 'prune' or 'restore' while one is between its first change and its reset; NULL otherwise.
    command    text        CHECK (command IN ('prune', 'restore')),
    began_at   timestamptz,
    CHECK ((command IS NULL) = (began_at IS NULL))
);
COMMENT ON TABLE log_rewrite IS
    'Whether a prune or a restore is changing the log under incremental experiment looks, and how many have begun.';
INSERT INTO log_rewrite DEFAULT VALUES;
