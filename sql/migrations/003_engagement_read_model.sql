-- The engagement read model, folded from the event log by the projector. Everything here can be
-- rebuilt by replaying the log (engage projections rebuild).

-- Where each projection has read the log up to, updated in the same transaction as its tables.
CREATE TABLE projection_checkpoints (
    projection       text        PRIMARY KEY,
    transaction_id   xid8        NOT NULL DEFAULT '0',
    position         bigint      NOT NULL DEFAULT 0,
    events_processed bigint      NOT NULL DEFAULT 0,
    updated_at       timestamptz NOT NULL DEFAULT now()
);

-- Each notification's folded state (EngageCore's NotificationState, encoded), so a late event
-- can move the notification between aggregates without counting it twice.
CREATE TABLE notification_states (
    app_id          text NOT NULL,
    notification_id text NOT NULL,
    state           text NOT NULL,
    PRIMARY KEY (app_id, notification_id)
);

-- Notifications per app, category, presentation (rich, plain, unknown = not displayed yet),
-- attachment kind and UTC day, with how many were delivered, displayed, expanded, acted on...
CREATE TABLE engagement_daily (
    app_id          text   NOT NULL,
    category        text   NOT NULL,
    presentation    text   NOT NULL,
    attachment_kind text   NOT NULL,
    day             date   NOT NULL,
    notifications   bigint NOT NULL DEFAULT 0,
    delivered       bigint NOT NULL DEFAULT 0,
    displayed       bigint NOT NULL DEFAULT 0,
    expanded        bigint NOT NULL DEFAULT 0,
    actioned        bigint NOT NULL DEFAULT 0,
    opened          bigint NOT NULL DEFAULT 0,
    dismissed       bigint NOT NULL DEFAULT 0,
    replied         bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (app_id, category, presentation, attachment_kind, day)
);

-- Notifications with each app-defined action id, in the same buckets.
CREATE TABLE engagement_actions_daily (
    app_id          text   NOT NULL,
    category        text   NOT NULL,
    presentation    text   NOT NULL,
    attachment_kind text   NOT NULL,
    day             date   NOT NULL,
    action_id       text   NOT NULL,
    notifications   bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (app_id, category, presentation, attachment_kind, day, action_id)
);

-- What the Notification Service Extension did, per category, attachment kind and day. The
-- histograms are LatencyHistogram counts (1 ms to 60 s, 1% buckets), summed element-wise.
CREATE TABLE extension_telemetry_daily (
    app_id                  text     NOT NULL,
    category                text     NOT NULL,
    attachment_kind         text     NOT NULL,
    day                     date     NOT NULL,
    delivered               bigint   NOT NULL DEFAULT 0,
    attached                bigint   NOT NULL DEFAULT 0,
    timeout                 bigint   NOT NULL DEFAULT 0,
    too_large               bigint   NOT NULL DEFAULT 0,
    unsupported_format      bigint   NOT NULL DEFAULT 0,
    download_failed         bigint   NOT NULL DEFAULT 0,
    not_requested           bigint   NOT NULL DEFAULT 0,
    time_will_expire        bigint   NOT NULL DEFAULT 0,
    cache_hits              bigint   NOT NULL DEFAULT 0,
    network_fetches         bigint   NOT NULL DEFAULT 0,
    bytes                   bigint   NOT NULL DEFAULT 0,
    bytes_reported          bigint   NOT NULL DEFAULT 0,
    download_ms_histogram   bigint[] NOT NULL DEFAULT '{}',
    processing_ms_histogram bigint[] NOT NULL DEFAULT '{}',
    PRIMARY KEY (app_id, category, attachment_kind, day)
);

-- Element-wise sum of two count arrays of possibly different lengths.
CREATE FUNCTION engage_add_counts(a bigint[], b bigint[]) RETURNS bigint[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT coalesce(array_agg(coalesce(x, 0) + coalesce(y, 0) ORDER BY n), '{}')
    FROM unnest(a, b) WITH ORDINALITY AS u(x, y, n)
$$;

-- Sums count arrays across rows (for reports and dashboards).
CREATE AGGREGATE engage_sum_counts(bigint[]) (
    SFUNC = engage_add_counts,
    STYPE = bigint[],
    INITCOND = '{}'
);
