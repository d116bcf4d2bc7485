-- Each appending session takes log positions from the sequence a thousand at a time instead of
-- locking and WAL-logging it for every row: two committers appending side by side otherwise
-- take turns on the sequence's one page. Positions stay increasing within a transaction, which
-- is all readers need: they read in (transaction_id, position) order (docs/design.md). Values a
-- session took and did not use are skipped, as positions of rolled-back appends already are.
ALTER SEQUENCE events_position_seq CACHE 1000;
