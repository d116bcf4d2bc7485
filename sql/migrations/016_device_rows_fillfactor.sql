-- The projector rewrites a device's row in engagement_devices each time one of its notifications
-- changes. With full pages each rewrite went to another page and added an entry to both of the
-- table's indexes (then cleaned up by bottom-up deletion): of 450,000 updates in a 1,000,000-event
-- catch-up (`engage bench project`) 18% were HOT, and the batch upserts took 3.6 s of the
-- catch-up's 26 s. Leaving half of each page free keeps a row's new version on its page and the
-- indexes untouched: every update HOT, the upserts 1.6 s. 70% fill was not enough (65% HOT).
--
-- Pages written before this migration stay full until the next `engage rebuild`; the rebuild's
-- tables take the live tables' storage parameters.
ALTER TABLE engagement_devices SET (fillfactor = 50);
