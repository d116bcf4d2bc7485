-- CUPED's pre-period read (issue 15 point 7) reads the events that occurred in a window before an
-- experiment started. Without an index on occurred_at it scanned every row of the log, the
-- experiment's own (newer) events included. Events arrive close to the order in which they
-- occurred, so a BRIN index (a few kilobytes per partition, next to nothing to maintain at
-- ingestion) lets it skip the pages whose events all lie outside the window: measured on 1,000,000
-- notifications with a pre-period of as many, 42% of the pages read.
CREATE INDEX events_occurred_at ON events USING brin (occurred_at);
