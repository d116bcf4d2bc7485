-- Views over the stored analysis runs (experiment_runs.result, the canonical JSON documented in
-- Sources/EngageCore/Experiments/ExperimentRunResultJSON.swift) for dashboards and ad-hoc SQL.
-- Only finished runs (status 'done') have a result. Filter by experiment_id: the filter reaches
-- experiment_runs' (experiment_id, scheduled_for) index, so only that experiment's JSON is read.
-- Recreated after every migration run.

-- One row per finished run: when it looked, what it decided, and its sample ratio check.
CREATE OR REPLACE VIEW experiment_run_results AS
SELECT e.app_id,
       r.experiment_id,
       r.id AS run_id,
       r.scheduled_for,
       r.finished_at,
       r.manual,
       (r.result->>'look')::int AS look,
       (r.result->>'analyzed_at')::timestamptz AS analyzed_at,
       r.result->>'primary_metric' AS primary_metric,
       (r.result->>'alpha')::float8 AS alpha,
       (r.result->>'decision_alpha')::float8 AS decision_alpha,
       r.result->'decision'->>'code' AS decision,
       r.result->'decision'->>'arm' AS decision_arm,
       r.result->'decision'->>'reason' AS decision_reason,
       r.result->'decision'->>'rationale' AS rationale,
       (r.result->'sample_ratio_mismatch'->>'p_value')::float8 AS srm_p_value,
       (r.result->'sample_ratio_mismatch'->>'threshold')::float8 AS srm_threshold,
       (r.result->'sample_ratio_mismatch'->>'mismatch')::boolean AS srm_mismatch
FROM experiment_runs r
JOIN experiments e ON e.id = r.experiment_id
WHERE r.status = 'done';

-- Each experiment's latest analysis: its finished run scheduled last.
CREATE OR REPLACE VIEW experiment_latest_runs AS
SELECT DISTINCT ON (experiment_id) experiment_id, id AS run_id, scheduled_for
FROM experiment_runs
WHERE status = 'done'
ORDER BY experiment_id, scheduled_for DESC, id DESC;

-- One row per finished run and arm, in the definition's arm order: devices, counts, and the
-- primary metric's rate (successes per trial) by assigned arm.
CREATE OR REPLACE VIEW experiment_run_arms AS
SELECT e.app_id,
       r.experiment_id,
       r.id AS run_id,
       r.scheduled_for,
       a.position AS arm_position,
       a.arm->>'name' AS arm,
       a.arm->>'strategy' AS strategy,
       (a.arm->>'control')::boolean AS is_control,
       (a.arm->>'weight')::float8 AS weight,
       (a.arm->>'devices')::bigint AS devices,
       (a.arm->'counts'->>'notifications')::bigint AS notifications,
       (a.arm->'counts'->>'delivered')::bigint AS delivered,
       (a.arm->'counts'->>'displayed')::bigint AS displayed,
       (a.arm->'counts'->>'rich_displayed')::bigint AS rich_displayed,
       (a.arm->'counts'->>'expanded')::bigint AS expanded,
       (a.arm->'counts'->>'actioned')::bigint AS actioned,
       (a.arm->'counts'->>'opened')::bigint AS opened,
       (a.arm->'counts'->>'dismissed')::bigint AS dismissed,
       (a.arm->'counts'->>'replied')::bigint AS replied,
       r.result->>'primary_metric' AS primary_metric,
       (p.rate->>'successes')::bigint AS primary_successes,
       (p.rate->>'trials')::bigint AS primary_trials,
       (p.rate->>'rate')::float8 AS primary_rate,
       (a.arm->>'processing_ms_p50')::float8 AS processing_ms_p50,
       (a.arm->>'processing_ms_p95')::float8 AS processing_ms_p95
FROM experiment_runs r
JOIN experiments e ON e.id = r.experiment_id
CROSS JOIN LATERAL jsonb_array_elements(r.result->'arms') WITH ORDINALITY AS a(arm, position)
-- A treatment's primary rate is the variant of its own comparison; the control's is the
-- control side of any comparison (the same in each).
LEFT JOIN LATERAL (
    SELECT CASE WHEN (a.arm->>'control')::boolean THEN m.metric->'control' ELSE m.metric->'variant' END AS rate
    FROM jsonb_array_elements(r.result->'intent_to_treat') AS c(comparison)
    CROSS JOIN LATERAL jsonb_array_elements(c.comparison->'metrics') AS m(metric)
    WHERE m.metric->>'role' = 'primary'
      AND ((a.arm->>'control')::boolean OR c.comparison->>'arm' = a.arm->>'name')
    LIMIT 1
) p ON true
WHERE r.status = 'done';

-- One row per finished run, treatment arm and metric (the primary first, then the guardrails):
-- the intent-to-treat rates and the RELATIVE lift against the control (gbstats' scale) with its
-- fixed-horizon and sequential (always-valid) intervals and p-values. Each p-value belongs to the
-- interval beside it: with several treatments the primary metric's intervals are Bonferroni
-- corrected and its p-values adjusted to match (p_value_correction says how; the *_unadjusted
-- columns are the comparisons' own). Decisions use the sequential interval of the relative lift
-- read from the log ratio of means (decision_sequential_*, around the same estimate `lift`:
-- exp(ln(m_t / m_c)) - 1 = m_t / m_c - 1), whose errors split evenly between the sides.
-- With CUPED every lift is regression-adjusted and cuped_variance_reduction is
-- 1 - Var(adjusted) / Var(unadjusted) of the decision's log ratio (NULL without CUPED).
-- guardrail_untested_and_worse: a guardrail no test could read, on its forbidden side (or with no
-- trials in an arm); it blocks shipping as a violated one does. A run stored before the result
-- said so gets it from the result's own rates and direction, by the same rule
-- (ExperimentMetricComparison.isGuardrailUntestedAndWorse).
-- New columns are appended at the end, as CREATE OR REPLACE VIEW requires.
CREATE OR REPLACE VIEW experiment_run_metrics AS
SELECT e.app_id,
       r.experiment_id,
       r.id AS run_id,
       r.scheduled_for,
       c.position AS arm_position,
       c.comparison->>'arm' AS arm,
       m.position AS metric_position,
       m.metric->>'metric' AS metric,
       m.metric->>'role' AS role,
       m.metric->>'direction' AS direction,
       (m.metric->>'confidence')::float8 AS confidence,
       (m.metric->'control'->>'rate')::float8 AS control_rate,
       (m.metric->'variant'->>'rate')::float8 AS variant_rate,
       (m.metric->'relative'->>'estimate')::float8 AS lift,
       (m.metric->'relative'->'sequential'->>'lower')::float8 AS sequential_lower,
       (m.metric->'relative'->'sequential'->>'upper')::float8 AS sequential_upper,
       (m.metric->'relative'->'sequential'->>'p_value')::float8 AS sequential_p_value,
       (m.metric->'relative'->'fixed'->>'lower')::float8 AS fixed_lower,
       (m.metric->'relative'->'fixed'->>'upper')::float8 AS fixed_upper,
       (m.metric->'relative'->'fixed'->>'p_value')::float8 AS fixed_p_value,
       (m.metric->'relative'->>'chance_to_win')::float8 AS chance_to_win,
       (m.metric->>'guardrail_violated')::boolean AS guardrail_violated,
       m.metric->>'unavailable' AS unavailable,
       coalesce(m.metric->>'p_value_correction', 'none') AS p_value_correction,
       (m.metric->'relative'->'sequential'->>'p_value_unadjusted')::float8 AS sequential_p_value_unadjusted,
       (m.metric->'relative'->'fixed'->>'p_value_unadjusted')::float8 AS fixed_p_value_unadjusted,
       (m.metric->'log_ratio'->'sequential'->>'lower')::float8 AS decision_sequential_lower,
       (m.metric->'log_ratio'->'sequential'->>'upper')::float8 AS decision_sequential_upper,
       (m.metric->'log_ratio'->'sequential'->>'p_value')::float8 AS decision_sequential_p_value,
       (m.metric->'cuped'->>'variance_reduction')::float8 AS cuped_variance_reduction,
       coalesce((m.metric->>'guardrail_untested_and_worse')::boolean,
                m.metric->>'role' = 'guardrail' AND m.metric->>'unavailable' IS NOT NULL
                AND (m.metric->'variant'->>'rate' IS NULL OR m.metric->'control'->>'rate' IS NULL
                     OR (m.metric->>'direction' = 'must_not_increase'
                         AND (m.metric->'variant'->>'rate')::float8 > (m.metric->'control'->>'rate')::float8)
                     OR (m.metric->>'direction' = 'must_not_decrease'
                         AND (m.metric->'variant'->>'rate')::float8 < (m.metric->'control'->>'rate')::float8)))
           AS guardrail_untested_and_worse
FROM experiment_runs r
JOIN experiments e ON e.id = r.experiment_id
CROSS JOIN LATERAL jsonb_array_elements(r.result->'intent_to_treat') WITH ORDINALITY AS c(comparison, position)
CROSS JOIN LATERAL jsonb_array_elements(c.comparison->'metrics') WITH ORDINALITY AS m(metric, position)
WHERE r.status = 'done';
