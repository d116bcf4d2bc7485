-- Incremental experiment looks (issue 19): each experiment's tallies kept between looks by a
-- checkpointed fold, so that a look reads only the events appended since the last one.
-- Written only by ExperimentTallyStore, in one transaction per fold with the checkpoint.

CREATE TABLE experiment_tally_checkpoints (
    experiment_id      text    PRIMARY KEY,
    -- The app, categories and arms the tallies were folded for: another definition refolds.
    definition_key     text    NOT NULL,
    -- Every event of a transaction below this id is folded (none of them can still commit).
    folded_below       xid8    NOT NULL,
    events             bigint  NOT NULL,
    notifications      bigint  NOT NULL,
    undecodable        bigint  NOT NULL,
    other_experiment   bigint  NOT NULL,
    unknown_arm        bigint  NOT NULL,
    outside_categories bigint  NOT NULL,
    folded_at          timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE experiment_tally_checkpoints IS
    'Where each experiment''s incremental tallies stand: the log folded below a transaction id, and the replay''s counts.';

CREATE TABLE experiment_device_tallies (
    experiment_id text     NOT NULL REFERENCES experiment_tally_checkpoints ON DELETE CASCADE,
    -- The arm's position in the definition (0, 1, ...), -1 displayed rich, -2 displayed plain.
    tally         smallint NOT NULL,
    device_id     text     NOT NULL,
    -- The device's notifications per funnel stage, by the stage's raw value (FunnelCounts).
    counts        bigint[] NOT NULL,
    PRIMARY KEY (experiment_id, tally, device_id)
);
COMMENT ON TABLE experiment_device_tallies IS
    'Each device''s summed funnel counts in each tally of an experiment, as of its checkpoint.';

CREATE TABLE experiment_tally_histograms (
    experiment_id text     NOT NULL REFERENCES experiment_tally_checkpoints ON DELETE CASCADE,
    tally         smallint NOT NULL,
    -- LatencyHistogram counts (standard layout) of the tally's processing_ms.
    counts        bigint[] NOT NULL,
    PRIMARY KEY (experiment_id, tally)
);
COMMENT ON TABLE experiment_tally_histograms IS
    'The processing-time histogram of each tally of an experiment, as of its checkpoint.';
