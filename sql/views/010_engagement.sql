-- Views over the engagement read model for dashboards and ad-hoc SQL. Recreated after every
-- migration run and after a rebuild swaps the tables in.

-- Wilson score interval bounds for x successes in n trials at 95% (z = 1.959964).
CREATE OR REPLACE FUNCTION engage_wilson_lower(x bigint, n bigint) RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN n IS NULL OR n <= 0 THEN NULL ELSE
        greatest(0.0, ((x::float8 / n) + 1.959964^2 / (2 * n)
            - 1.959964 * sqrt((x::float8 / n) * (1 - x::float8 / n) / n + 1.959964^2 / (4.0 * n * n)))
        / (1 + 1.959964^2 / n)) END
$$;

CREATE OR REPLACE FUNCTION engage_wilson_upper(x bigint, n bigint) RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN n IS NULL OR n <= 0 THEN NULL ELSE
        least(1.0, ((x::float8 / n) + 1.959964^2 / (2 * n)
            + 1.959964 * sqrt((x::float8 / n) * (1 - x::float8 / n) / n + 1.959964^2 / (4.0 * n * n)))
        / (1 + 1.959964^2 / n)) END
$$;

-- Engagement per app, category, presentation and day, with rates over displayed notifications.
CREATE OR REPLACE VIEW engagement_rates_daily AS
SELECT app_id, category, presentation, day,
       sum(notifications)::bigint AS notifications,
       sum(delivered)::bigint AS delivered,
       sum(displayed)::bigint AS displayed,
       sum(expanded)::bigint AS expanded,
       sum(actioned)::bigint AS actioned,
       sum(opened)::bigint AS opened,
       sum(dismissed)::bigint AS dismissed,
       sum(replied)::bigint AS replied,
       sum(expanded)::float8 / nullif(sum(displayed), 0) AS expansion_rate,
       sum(actioned)::float8 / nullif(sum(displayed), 0) AS action_rate,
       sum(opened)::float8 / nullif(sum(displayed), 0) AS open_rate,
       sum(dismissed)::float8 / nullif(sum(displayed), 0) AS dismiss_rate,
       sum(replied)::float8 / nullif(sum(displayed), 0) AS reply_rate
FROM engagement_daily
GROUP BY app_id, category, presentation, day;

-- The same over all days, with Wilson 95% intervals: rich versus plain per category.
CREATE OR REPLACE VIEW engagement_rates_by_category AS
SELECT app_id, category, presentation,
       sum(notifications)::bigint AS notifications,
       sum(displayed)::bigint AS displayed,
       sum(expanded)::bigint AS expanded,
       sum(actioned)::bigint AS actioned,
       sum(opened)::bigint AS opened,
       sum(dismissed)::bigint AS dismissed,
       sum(replied)::bigint AS replied,
       sum(expanded)::float8 / nullif(sum(displayed), 0) AS expansion_rate,
       engage_wilson_lower(sum(expanded)::bigint, sum(displayed)::bigint) AS expansion_lower,
       engage_wilson_upper(sum(expanded)::bigint, sum(displayed)::bigint) AS expansion_upper,
       sum(actioned)::float8 / nullif(sum(displayed), 0) AS action_rate,
       engage_wilson_lower(sum(actioned)::bigint, sum(displayed)::bigint) AS action_lower,
       engage_wilson_upper(sum(actioned)::bigint, sum(displayed)::bigint) AS action_upper,
       sum(opened)::float8 / nullif(sum(displayed), 0) AS open_rate,
       engage_wilson_lower(sum(opened)::bigint, sum(displayed)::bigint) AS open_lower,
       engage_wilson_upper(sum(opened)::bigint, sum(displayed)::bigint) AS open_upper,
       sum(dismissed)::float8 / nullif(sum(displayed), 0) AS dismiss_rate,
       sum(replied)::float8 / nullif(sum(displayed), 0) AS reply_rate
FROM engagement_daily
WHERE presentation IN ('rich', 'plain')
GROUP BY app_id, category, presentation;

-- What the Notification Service Extension did, per category and attachment kind and day.
CREATE OR REPLACE VIEW extension_outcomes_daily AS
SELECT app_id, category, attachment_kind, day, delivered, attached, timeout, too_large, unsupported_format,
       download_failed, not_requested, time_will_expire,
       cache_hits::float8 / nullif(cache_hits + network_fetches, 0) AS cache_hit_rate,
       timeout::float8 / nullif(delivered, 0) AS timeout_rate,
       too_large::float8 / nullif(delivered, 0) AS too_large_rate,
       bytes
FROM extension_telemetry_daily;
