-- The analysis replay reads one experiment's events in notification order. The index on
-- (app_id, notification_id) gives that order but walks every event of the app, filtering the
-- experiment's out after fetching each row; this one walks only the experiment's events, already
-- in order. It replaces events_experiment, whose columns are its prefix.
CREATE INDEX events_experiment_replay ON events (app_id, experiment_id, notification_id)
    WHERE experiment_id IS NOT NULL;
DROP INDEX events_experiment;
