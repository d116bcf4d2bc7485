-- Experiment lifecycle changes and analysis decisions move into the event log itself
-- (see ExperimentLogEntry): type `experiment_<action>`, stream `experiment:<id>`, no device.
-- What earlier versions kept in experiment_history, and the decisions of finished runs, are
-- copied into the log in their original order, then the side table goes.

WITH history AS (
    SELECT h.id, h.experiment_id, e.app_id, h.action, h.at, h.definition, gen_random_uuid() AS event_id
    FROM experiment_history h JOIN experiments e ON e.id = h.experiment_id
), new_ids AS (
    INSERT INTO event_ids (event_id) SELECT event_id FROM history
)
INSERT INTO events (event_id, app_id, notification_id, type, category, device_id, occurred_at, payload)
SELECT event_id, app_id, 'experiment:' || experiment_id, 'experiment_' || action, '', '', at,
       jsonb_build_object('action', action, 'reason', NULL, 'definition', definition)
FROM history
ORDER BY id;

WITH decided AS (
    SELECT r.id, r.experiment_id, e.app_id, r.scheduled_for, r.manual, r.decision, r.result, r.finished_at,
           gen_random_uuid() AS event_id
    FROM experiment_runs r JOIN experiments e ON e.id = r.experiment_id
    WHERE r.status = 'done'
), new_ids AS (
    INSERT INTO event_ids (event_id) SELECT event_id FROM decided
)
INSERT INTO events (event_id, app_id, notification_id, type, category, device_id, occurred_at, payload)
SELECT event_id, app_id, 'experiment:' || experiment_id, 'experiment_analysed', '', '', finished_at,
       jsonb_build_object('action', 'analysed', 'run_id', id,
                          'scheduled_for', to_char(scheduled_for AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
                          'manual', manual, 'decision', decision, 'result', result)
FROM decided
ORDER BY finished_at, id;

DROP TABLE experiment_history;

-- Lease renewal touches the run row every few seconds while an analysis runs.
COMMENT ON COLUMN experiment_runs.lease_until IS
    'Renewed while the analysis runs; another scheduler may retry the run once it has passed.';
