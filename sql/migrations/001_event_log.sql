-- The event log: immutable, append-only, partitioned by the month it was recorded in.
-- See docs/design.md for why positions are read in (transaction_id, position) order and why
-- idempotency lives in a separate table.

-- One row per event id ever accepted: the idempotency key, unique across every partition of
-- the log. Small rows, so it stays cheap to keep; it is pruned only past the acceptance window.
CREATE TABLE event_ids (
    event_id    uuid        PRIMARY KEY,
    recorded_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX event_ids_recorded_at ON event_ids USING brin (recorded_at);

CREATE SEQUENCE events_position_seq AS bigint;

CREATE TABLE events (
    position        bigint      NOT NULL DEFAULT nextval('events_position_seq'),
    -- The appending transaction: readers only read below the oldest transaction still running,
    -- so a transaction that commits late can never be skipped.
    transaction_id  xid8        NOT NULL DEFAULT pg_current_xact_id(),
    event_id        uuid        NOT NULL,
    app_id          text        NOT NULL,
    notification_id text        NOT NULL,
    type            text        NOT NULL,
    category        text        NOT NULL,
    device_id       text        NOT NULL,
    occurred_at     timestamptz NOT NULL,
    recorded_at     timestamptz NOT NULL DEFAULT now(),
    experiment_id   text,
    experiment_arm  text,
    payload         jsonb       NOT NULL
) PARTITION BY RANGE (recorded_at);

CREATE INDEX events_log_order ON events (transaction_id, position);
CREATE INDEX events_stream ON events (app_id, notification_id);

-- Whatever falls outside the monthly partitions still lands somewhere; maintenance keeps it empty
-- by creating months ahead of time.
CREATE TABLE events_default PARTITION OF events DEFAULT;

-- Creates the monthly partitions from `months_back` months before now to `months_ahead` after.
CREATE FUNCTION engage_ensure_event_partitions(months_back int DEFAULT 1, months_ahead int DEFAULT 3)
RETURNS int LANGUAGE plpgsql AS $$
DECLARE
    first_month date := date_trunc('month', now() AT TIME ZONE 'UTC')::date - make_interval(months => months_back);
    month_start date;
    created int := 0;
    partition_name text;
BEGIN
    FOR step IN 0 .. (months_back + months_ahead) LOOP
        month_start := first_month + make_interval(months => step);
        partition_name := format('events_%s', to_char(month_start, 'YYYY_MM'));
        IF to_regclass(partition_name) IS NULL THEN
            EXECUTE format(
                'CREATE TABLE %I PARTITION OF events FOR VALUES FROM (%L) TO (%L)',
                partition_name,
                (month_start::timestamp AT TIME ZONE 'UTC'),
                ((month_start + interval '1 month')::timestamp AT TIME ZONE 'UTC'));
            created := created + 1;
        END IF;
    END LOOP;
    RETURN created;
END
$$;

SELECT engage_ensure_event_partitions(1, 3);

-- Wakes tailing readers (the projector) after each appending statement commits.
CREATE FUNCTION engage_notify_events_appended() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('engage_events', '');
    RETURN NULL;
END
$$;

CREATE TRIGGER events_appended AFTER INSERT ON events
    FOR EACH STATEMENT EXECUTE FUNCTION engage_notify_events_appended();
