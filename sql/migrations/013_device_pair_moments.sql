-- A device across categories (issue 16 point 4): a person who engages much does so in every
-- category, so the adjusted answer's variance needs the covariance of every two categories'
-- buckets over the devices they share. Per app and pair of categories (first before second in
-- byte order), sums over devices of products of the device's counts in the first category and in the
-- second (n = displayed, x = reached the stage; the first category's presentation is named first):
--   <a>_x_<b>_displayed: sum n_a n_b; <a>_x_<b>_<stage>: sum x_a x_b;
--   <a>_<stage>_x_<b>_displayed: sum x_a n_b; <a>_displayed_x_<b>_<stage>: sum n_a x_b.
-- A device with notifications in one of the two categories only adds 0. Kept by the projector in
-- the batch's transaction with engagement_devices (old terms subtracted, new ones added, so exact
-- in any order); a row whose devices all left is removed.
CREATE TABLE engagement_device_pair_moments (
    app_id          text NOT NULL,
    first_category  text NOT NULL,
    second_category text NOT NULL,
    rich_x_rich_displayed             bigint NOT NULL DEFAULT 0,
    rich_x_rich_expanded              bigint NOT NULL DEFAULT 0,
    rich_expanded_x_rich_displayed    bigint NOT NULL DEFAULT 0,
    rich_displayed_x_rich_expanded    bigint NOT NULL DEFAULT 0,
    rich_x_rich_actioned              bigint NOT NULL DEFAULT 0,
    rich_actioned_x_rich_displayed    bigint NOT NULL DEFAULT 0,
    rich_displayed_x_rich_actioned    bigint NOT NULL DEFAULT 0,
    rich_x_rich_opened                bigint NOT NULL DEFAULT 0,
    rich_opened_x_rich_displayed      bigint NOT NULL DEFAULT 0,
    rich_displayed_x_rich_opened      bigint NOT NULL DEFAULT 0,
    rich_x_rich_dismissed             bigint NOT NULL DEFAULT 0,
    rich_dismissed_x_rich_displayed   bigint NOT NULL DEFAULT 0,
    rich_displayed_x_rich_dismissed   bigint NOT NULL DEFAULT 0,
    rich_x_rich_replied               bigint NOT NULL DEFAULT 0,
    rich_replied_x_rich_displayed     bigint NOT NULL DEFAULT 0,
    rich_displayed_x_rich_replied     bigint NOT NULL DEFAULT 0,
    rich_x_plain_displayed            bigint NOT NULL DEFAULT 0,
    rich_x_plain_expanded             bigint NOT NULL DEFAULT 0,
    rich_expanded_x_plain_displayed   bigint NOT NULL DEFAULT 0,
    rich_displayed_x_plain_expanded   bigint NOT NULL DEFAULT 0,
    rich_x_plain_actioned             bigint NOT NULL DEFAULT 0,
    rich_actioned_x_plain_displayed   bigint NOT NULL DEFAULT 0,
    rich_displayed_x_plain_actioned   bigint NOT NULL DEFAULT 0,
    rich_x_plain_opened               bigint NOT NULL DEFAULT 0,
    rich_opened_x_plain_displayed     bigint NOT NULL DEFAULT 0,
    rich_displayed_x_plain_opened     bigint NOT NULL DEFAULT 0,
    rich_x_plain_dismissed            bigint NOT NULL DEFAULT 0,
    rich_dismissed_x_plain_displayed  bigint NOT NULL DEFAULT 0,
    rich_displayed_x_plain_dismissed  bigint NOT NULL DEFAULT 0,
    rich_x_plain_replied              bigint NOT NULL DEFAULT 0,
    rich_replied_x_plain_displayed    bigint NOT NULL DEFAULT 0,
    rich_displayed_x_plain_replied    bigint NOT NULL DEFAULT 0,
    plain_x_rich_displayed            bigint NOT NULL DEFAULT 0,
    plain_x_rich_expanded             bigint NOT NULL DEFAULT 0,
    plain_expanded_x_rich_displayed   bigint NOT NULL DEFAULT 0,
    plain_displayed_x_rich_expanded   bigint NOT NULL DEFAULT 0,
    plain_x_rich_actioned             bigint NOT NULL DEFAULT 0,
    plain_actioned_x_rich_displayed   bigint NOT NULL DEFAULT 0,
    plain_displayed_x_rich_actioned   bigint NOT NULL DEFAULT 0,
    plain_x_rich_opened               bigint NOT NULL DEFAULT 0,
    plain_opened_x_rich_displayed     bigint NOT NULL DEFAULT 0,
    plain_displayed_x_rich_opened     bigint NOT NULL DEFAULT 0,
    plain_x_rich_dismissed            bigint NOT NULL DEFAULT 0,
    plain_dismissed_x_rich_displayed  bigint NOT NULL DEFAULT 0,
    plain_displayed_x_rich_dismissed  bigint NOT NULL DEFAULT 0,
    plain_x_rich_replied              bigint NOT NULL DEFAULT 0,
    plain_replied_x_rich_displayed    bigint NOT NULL DEFAULT 0,
    plain_displayed_x_rich_replied    bigint NOT NULL DEFAULT 0,
    plain_x_plain_displayed           bigint NOT NULL DEFAULT 0,
    plain_x_plain_expanded            bigint NOT NULL DEFAULT 0,
    plain_expanded_x_plain_displayed  bigint NOT NULL DEFAULT 0,
    plain_displayed_x_plain_expanded  bigint NOT NULL DEFAULT 0,
    plain_x_plain_actioned            bigint NOT NULL DEFAULT 0,
    plain_actioned_x_plain_displayed  bigint NOT NULL DEFAULT 0,
    plain_displayed_x_plain_actioned  bigint NOT NULL DEFAULT 0,
    plain_x_plain_opened              bigint NOT NULL DEFAULT 0,
    plain_opened_x_plain_displayed    bigint NOT NULL DEFAULT 0,
    plain_displayed_x_plain_opened    bigint NOT NULL DEFAULT 0,
    plain_x_plain_dismissed           bigint NOT NULL DEFAULT 0,
    plain_dismissed_x_plain_displayed bigint NOT NULL DEFAULT 0,
    plain_displayed_x_plain_dismissed bigint NOT NULL DEFAULT 0,
    plain_x_plain_replied             bigint NOT NULL DEFAULT 0,
    plain_replied_x_plain_displayed   bigint NOT NULL DEFAULT 0,
    plain_displayed_x_plain_replied   bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (app_id, first_category, second_category),
    CHECK (first_category < second_category COLLATE "C")
);

-- The pairs' sums are updated from all of a changed device's categories.
CREATE INDEX engagement_devices_by_device ON engagement_devices (app_id, device_id);
