-- Byte sums of extension_telemetry_daily, exact: an event may report up to 2^53 bytes, so a
-- bucket of about a thousand such events passes what bigint holds. Held at the largest bigint
-- instead, a sum lost the bytes a notification later took away when it moved to another bucket
-- (a late, earlier `delivered` event): the model kept batch by batch then differed from a rebuild.
-- numeric keeps every sum exact; the report holds what it shows at the largest bigint.
--
-- The view over the column is dropped first (a view's column cannot change type); the migrator
-- recreates sql/views after the migrations. The table has a row per category, kind and day: the
-- rewrite is short.
DROP VIEW IF EXISTS extension_outcomes_daily;
ALTER TABLE extension_telemetry_daily ALTER COLUMN bytes TYPE numeric;
