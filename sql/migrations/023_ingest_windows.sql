-- The occurred_at window each running engage serve accepts (--max-past-days,
-- --max-future-minutes), written at its start and every hour while it runs, so that
-- engage log prune keeps the idempotency window of the largest one in use rather than only of
-- its own options (docs/retention.md). A row not seen for two days counts no more.
CREATE TABLE ingest_windows (
    max_past_seconds   bigint      NOT NULL CHECK (max_past_seconds >= 0),
    max_future_seconds bigint      NOT NULL CHECK (max_future_seconds >= 0),
    seen_at            timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (max_past_seconds, max_future_seconds)
);
