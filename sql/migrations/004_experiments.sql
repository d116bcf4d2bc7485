-- Experiments: their definitions, their lifecycle history and the scheduled analysis runs.

CREATE TABLE experiments (
    id          text        PRIMARY KEY,
    app_id      text        NOT NULL,
    -- The canonical JSON of ExperimentDefinition; its status is kept equal to `status`.
    definition  jsonb       NOT NULL,
    status      text        NOT NULL CHECK (status IN ('draft', 'running', 'stopped')),
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX experiments_app_status ON experiments (app_id, status);

-- Every lifecycle change (created, started, stopped), append-only, with the definition after it.
-- Kept beside the event log rather than in it: the log holds device events only.
CREATE TABLE experiment_history (
    id            bigserial   PRIMARY KEY,
    experiment_id text        NOT NULL REFERENCES experiments (id),
    action        text        NOT NULL CHECK (action IN ('created', 'started', 'stopped')),
    at            timestamptz NOT NULL DEFAULT now(),
    definition    jsonb       NOT NULL
);
CREATE INDEX experiment_history_experiment ON experiment_history (experiment_id, id);

-- One analysis run per experiment and scheduled time. The UNIQUE constraint makes enqueueing
-- idempotent across schedulers; the lease (owner, until) lets another scheduler retry a run
-- whose scheduler died, and `attempts` fences a late finish by the one that lost its lease.
CREATE TABLE experiment_runs (
    id            bigserial   PRIMARY KEY,
    experiment_id text        NOT NULL REFERENCES experiments (id),
    scheduled_for timestamptz NOT NULL,
    -- Asked for by hand (engage experiment run, POST .../run), not by the schedule.
    manual        boolean     NOT NULL DEFAULT false,
    status        text        NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'running', 'done', 'failed')),
    lease_owner   text,
    lease_until   timestamptz,
    attempts      int         NOT NULL DEFAULT 0,
    created_at    timestamptz NOT NULL DEFAULT now(),
    started_at    timestamptz,
    finished_at   timestamptz,
    decision      text,
    result        jsonb,
    error         text,
    UNIQUE (experiment_id, scheduled_for)
);
CREATE INDEX experiment_runs_claimable ON experiment_runs (scheduled_for) WHERE status IN ('pending', 'running');

-- The analysis replays one experiment's events of one app.
CREATE INDEX events_experiment ON events (app_id, experiment_id) WHERE experiment_id IS NOT NULL;
