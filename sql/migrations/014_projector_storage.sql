-- Storage of the rows the projector rewrites every batch (issue 19): none of them compressed.
--
-- Notification states in the projector's compact binary form (EngageCore's
-- NotificationStateBinaryCodec), about a third of the JSON text they were. Rows written before
-- this migration keep their JSON bytes (the codec still reads them: JSON starts with '{', the
-- binary form with its format byte) and turn binary when their notification is next written;
-- `engage projections rebuild` rewrites them all at once.
ALTER TABLE notification_states ALTER COLUMN state TYPE bytea USING convert_to(state, 'UTF8');
ALTER TABLE notification_states ALTER COLUMN state SET STORAGE EXTERNAL;

-- The latency histograms (dense arrays of about 400 counts) made each telemetry row larger than
-- the 2 kB above which PostgreSQL compresses: every batch decompressed and recompressed all the
-- rows it touched. Stored out of line uncompressed instead. (Existing values stay as they are
-- until rewritten.)
ALTER TABLE extension_telemetry_daily
    ALTER COLUMN download_ms_histogram SET STORAGE EXTERNAL,
    ALTER COLUMN processing_ms_histogram SET STORAGE EXTERNAL;
