-- The device as the unit of the report's intervals (issue 16 point 4). A device's notifications
-- are correlated (one person reads them), so a cluster-robust (delta method over devices) variance
-- needs, per category, sums over devices of each device's counts, their squares and products.
-- Both tables cover all days and attachment kinds: a device's notifications of a category are one
-- cluster. Rich and plain are the displayed presentation; notifications not displayed have no rate
-- and are not here. The projector keeps both in the same transaction as engagement_daily.

-- Per app, category and device: its displayed notifications and, per engagement stage, how many
-- of them reached it (x of n per metric), rich and plain. A row whose counts all return to 0 is
-- removed.
CREATE TABLE engagement_devices (
    app_id    text NOT NULL,
    category  text NOT NULL,
    device_id text NOT NULL,
    rich_displayed                   bigint NOT NULL DEFAULT 0,
    rich_expanded                    bigint NOT NULL DEFAULT 0,
    rich_actioned                    bigint NOT NULL DEFAULT 0,
    rich_opened                      bigint NOT NULL DEFAULT 0,
    rich_dismissed                   bigint NOT NULL DEFAULT 0,
    rich_replied                     bigint NOT NULL DEFAULT 0,
    plain_displayed                  bigint NOT NULL DEFAULT 0,
    plain_expanded                   bigint NOT NULL DEFAULT 0,
    plain_actioned                   bigint NOT NULL DEFAULT 0,
    plain_opened                     bigint NOT NULL DEFAULT 0,
    plain_dismissed                  bigint NOT NULL DEFAULT 0,
    plain_replied                    bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (app_id, category, device_id)
);

-- Per app and category, sums over its devices (n = displayed, x = reached the stage):
--   p_devices: devices with n > 0; p_displayed, p_<stage>: sum n, sum x;
--   p_displayed_sq: sum n^2; p_<stage>_sq: sum x^2; p_<stage>_x_displayed: sum x n;
--   rich_x_plain_displayed: sum n_rich n_plain; rich_x_plain_<stage>: sum x_rich x_plain;
--   rich_<stage>_x_plain_displayed: sum x_rich n_plain; rich_displayed_x_plain_<stage>: sum n_rich x_plain.
-- Updated by subtracting a device's old terms and adding its new ones, so exact in any order.
CREATE TABLE engagement_device_moments (
    app_id   text NOT NULL,
    category text NOT NULL,
    rich_devices                     bigint NOT NULL DEFAULT 0,
    rich_displayed                   bigint NOT NULL DEFAULT 0,
    rich_displayed_sq                bigint NOT NULL DEFAULT 0,
    rich_expanded                    bigint NOT NULL DEFAULT 0,
    rich_expanded_sq                 bigint NOT NULL DEFAULT 0,
    rich_expanded_x_displayed        bigint NOT NULL DEFAULT 0,
    rich_actioned                    bigint NOT NULL DEFAULT 0,
    rich_actioned_sq                 bigint NOT NULL DEFAULT 0,
    rich_actioned_x_displayed        bigint NOT NULL DEFAULT 0,
    rich_opened                      bigint NOT NULL DEFAULT 0,
    rich_opened_sq                   bigint NOT NULL DEFAULT 0,
    rich_opened_x_displayed          bigint NOT NULL DEFAULT 0,
    rich_dismissed                   bigint NOT NULL DEFAULT 0,
    rich_dismissed_sq                bigint NOT NULL DEFAULT 0,
    rich_dismissed_x_displayed       bigint NOT NULL DEFAULT 0,
    rich_replied                     bigint NOT NULL DEFAULT 0,
    rich_replied_sq                  bigint NOT NULL DEFAULT 0,
    rich_replied_x_displayed         bigint NOT NULL DEFAULT 0,
    plain_devices                    bigint NOT NULL DEFAULT 0,
    plain_displayed                  bigint NOT NULL DEFAULT 0,
    plain_displayed_sq               bigint NOT NULL DEFAULT 0,
    plain_expanded                   bigint NOT NULL DEFAULT 0,
    plain_expanded_sq                bigint NOT NULL DEFAULT 0,
    plain_expanded_x_displayed       bigint NOT NULL DEFAULT 0,
    plain_actioned                   bigint NOT NULL DEFAULT 0,
    plain_actioned_sq                bigint NOT NULL DEFAULT 0,
    plain_actioned_x_displayed       bigint NOT NULL DEFAULT 0,
    plain_opened                     bigint NOT NULL DEFAULT 0,
    plain_opened_sq                  bigint NOT NULL DEFAULT 0,
    plain_opened_x_displayed         bigint NOT NULL DEFAULT 0,
    plain_dismissed                  bigint NOT NULL DEFAULT 0,
    plain_dismissed_sq               bigint NOT NULL DEFAULT 0,
    plain_dismissed_x_displayed      bigint NOT NULL DEFAULT 0,
    plain_replied                    bigint NOT NULL DEFAULT 0,
    plain_replied_sq                 bigint NOT NULL DEFAULT 0,
    plain_replied_x_displayed        bigint NOT NULL DEFAULT 0,
    rich_x_plain_displayed           bigint NOT NULL DEFAULT 0,
    rich_x_plain_expanded            bigint NOT NULL DEFAULT 0,
    rich_expanded_x_plain_displayed  bigint NOT NULL DEFAULT 0,
    rich_displayed_x_plain_expanded  bigint NOT NULL DEFAULT 0,
    rich_x_plain_actioned            bigint NOT NULL DEFAULT 0,
    rich_actioned_x_plain_displayed  bigint NOT NULL DEFAULT 0,
    rich_displayed_x_plain_actioned  bigint NOT NULL DEFAULT 0,
    rich_x_plain_opened              bigint NOT NULL DEFAULT 0,
    rich_opened_x_plain_displayed    bigint NOT NULL DEFAULT 0,
    rich_displayed_x_plain_opened    bigint NOT NULL DEFAULT 0,
    rich_x_plain_dismissed           bigint NOT NULL DEFAULT 0,
    rich_dismissed_x_plain_displayed bigint NOT NULL DEFAULT 0,
    rich_displayed_x_plain_dismissed bigint NOT NULL DEFAULT 0,
    rich_x_plain_replied             bigint NOT NULL DEFAULT 0,
    rich_replied_x_plain_displayed   bigint NOT NULL DEFAULT 0,
    rich_displayed_x_plain_replied   bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (app_id, category)
);
