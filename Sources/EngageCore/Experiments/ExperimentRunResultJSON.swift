/// The canonical JSON of an analysis, for storage, the log and dashboards. Every key is always
/// present, in the order below; undefined numbers are `null`, never NaN.
///
///     {"experiment_id": s, "analyzed_at": rfc3339, "look": n, "alpha": x, "decision_alpha": x,
///      "sequential_tuning": x, "primary_metric": s,
///      "decision": {"code": "continue" | "ship" | "stop_no_effect" | "invalid_sample_ratio_mismatch",
///                   "arm": s | null, "reason": "equivalence" | "maximum_sample" | "schedule_ended" | null,
///                   "rationale": s},
///      "sample_ratio_mismatch": {"p_value": x, "threshold": 0.001, "mismatch": bool},
///      "arms": [{"name", "strategy", "control": bool, "weight", "devices", "counts": COUNTS,
///                "processing_ms_p50": x | null, "processing_ms_p95": x | null}, ...],
///      "cuped": {"pre_period_from": rfc3339, "pre_period_to": rfc3339, "pre_period_days": n,
///                "devices_with_history": n} | null,
///         CUPED's pre-experiment window (to = start_at); null when the analysis ran without it
///         ("cuped": "off", or no start_at). Added with issue 15.
///      "intent_to_treat": [{"arm": s, "strategy": s, "metrics": [METRIC, ...]}, ...],
///      "as_treated": {"label": s, "rich": COUNTS, "plain": COUNTS, "rich_devices": n,
///                     "plain_devices": n, "metrics": [METRIC, ...],
///                     "device_clustered": [{"metric": s, "shared_devices": n,
///                                           "difference": CLUSTERED | null, "ratio": CLUSTERED | null,
///                                           "unavailable": code | null}, ...]},
///         "device_clustered" is the comparison to read: the device is the unit and a device seen
///         both rich and plain counts on both sides (ClusteredProportionComparison); "metrics"
///         takes rich and plain as independent samples.
///     CLUSTERED = {"estimate": x, "lower": x, "upper": x, "p_value": x, "design_effect": x}
///         difference p_rich - p_plain, or ratio p_rich / p_plain (interval from its log)
///      "excluded": {"other_experiment": n, "unknown_arm": n, "outside_categories": n}}
///     COUNTS = {"<stage>": n, ...}, one key per `FunnelStage` in declaration order:
///              notifications, delivered, displayed, rich_displayed, expanded, actioned, opened,
///              dismissed, replied
///     METRIC = {"metric": s, "role": "primary" | "guardrail" | "observational",
///               "direction": "must_not_decrease" | "must_not_increase" | null,
///               "confidence": x, "p_value_correction": "none" | "bonferroni xT",
///               "control": RATE, "variant": RATE,
///               "absolute": LIFT | null, "relative": LIFT | null, "unavailable": code | null,
///               "guardrail_violated": bool, "guardrail_untested_and_worse": bool,
///               "decision_scale": "log_ratio", "log_ratio": LOG_RATIO | null,
///               "not_enough_data": bool, "cuped": CUPED | null}
///              "guardrail_untested_and_worse": a guardrail no test could read whose treatment rate
///              is on its forbidden side (or an arm with no trials): it blocks shipping as a
///              violated one does, though it is not "violated".
///              "not_enough_data" is the named state of a comparison that cannot be analysed
///              (an arm under two devices, a variance of 0, a control mean of 0; "unavailable"
///              names which): its lifts are null and it decides nothing.
///     CUPED = {"theta": x, "variance_reduction": x | null, "relative_variance_reduction": x | null,
///              "absolute_variance_reduction": x | null}
///              the regression adjustment (gbstats' RegressionAdjustedStatistic on the ratio's
///              linearisation) and 1 - Var(adjusted effect) / Var(unadjusted effect) on the log
///              ratio (what decisions read), the relative and the absolute scale; null on the
///              as-treated comparisons and without CUPED. Every lift above is the adjusted one.
///     RATE = {"successes": n, "trials": n, "devices": n, "rate": x | null}
///     LIFT = {"estimate": x, "standard_error": x, "fixed": TEST, "sequential": TEST | null,
///             "chance_to_win": x, "degrees_of_freedom": x, "credible_interval": {"lower": x, "upper": x},
///             "risk_control": x, "risk_treatment": x}
///            gbstats 0.8.0's figures for a ratio metric over devices (RatioStatistic with sample
///            moments, TwoSidedTTest, SequentialTwoSidedTTest, EffectBayesianABTest); before
///            issue 15 the variance used population moments (divisor D, not D - 1).
///     TEST = {"lower": x, "upper": x, "p_value": x, "p_value_unadjusted": x}
///            "p_value" belongs to the interval beside it: below alpha exactly when the interval
///            excludes 0. The primary metric's intervals with T > 1 treatments are at alpha / T
///            (Bonferroni) and its "p_value" is min(1, T p) ("p_value_correction": "bonferroni xT");
///            "p_value_unadjusted" is the comparison's own p. Before issue 15 "p_value" was the
///            unadjusted one for every metric.
///     LOG_RATIO = {"estimate": x, "log_estimate": x, "log_standard_error": x, "degrees_of_freedom": x,
///                  "fixed": TEST, "sequential": TEST | null, "chance_to_win": x}
///              the relative lift read from the log ratio of means (`ExperimentDecisionLift`):
///              estimate and bounds are exp(.) - 1 of the log-scale ones; ship and guardrail
///              decisions read its sequential interval, "relative" is gbstats' scale beside it.
///              "unavailable" names the first lift that could not be computed.
extension ExperimentRunResult {
    public var canonicalJSON: [UInt8] {
        var w = JSONWriter(capacity: 4096)
        w.beginObject()
        w.key("experiment_id"); w.string(experimentID)
        w.key("analyzed_at"); w.string(analyzedAt.rfc3339)
        w.key("look"); w.int(look)
        w.key("alpha"); w.double(alpha)
        w.key("decision_alpha"); w.double(decisionAlpha)
        w.key("sequential_tuning"); w.double(sequentialTuning)
        w.key("primary_metric"); w.string(primaryMetric.rawValue)
        w.key("decision")
        w.object { w in
            w.key("code"); w.string(decision.code)
            w.key("arm")
            if case .ship(let arm) = decision { w.string(arm) } else { w.null() }
            w.key("reason")
            if case .stopNoEffect(let reason) = decision { w.string(reason.rawValue) } else { w.null() }
            w.key("rationale"); w.string(rationale)
        }
        w.key("sample_ratio_mismatch")
        w.object { w in
            w.key("p_value"); w.double(sampleRatioMismatchPValue)
            w.key("threshold"); w.double(ExperimentAnalysis.sampleRatioMismatchThreshold)
            w.key("mismatch"); w.bool(hasSampleRatioMismatch)
        }
        w.key("arms")
        w.objects(arms) { w, arm in
            w.key("name"); w.string(arm.name)
            w.key("strategy"); w.string(arm.strategy.rawValue)
            w.key("control"); w.bool(arm.isControl)
            w.key("weight"); w.double(arm.weight)
            w.key("devices"); w.int(arm.devices)
            w.key("counts"); w.experimentCounts(arm.counts)
            w.key("processing_ms_p50"); w.optionalDouble(arm.processingP50)
            w.key("processing_ms_p95"); w.optionalDouble(arm.processingP95)
        }
        w.key("cuped")
        w.optionalObject(cupedWindow) { w, window in
            w.key("pre_period_from"); w.string(window.from.rfc3339)
            w.key("pre_period_to"); w.string(window.to.rfc3339)
            w.key("pre_period_days"); w.int(window.days)
            w.key("devices_with_history"); w.int(window.devicesWithHistory)
        }
        w.key("intent_to_treat")
        w.objects(comparisons) { w, comparison in
            w.key("arm"); w.string(comparison.arm)
            w.key("strategy"); w.string(comparison.strategy.rawValue)
            w.key("metrics"); w.array(comparison.metrics) { w, metric in w.metricComparison(metric) }
        }
        w.key("as_treated")
        w.object { w in
            w.key("label"); w.string(ExperimentAsTreatedResult.label)
            w.key("rich"); w.experimentCounts(asTreated.rich)
            w.key("plain"); w.experimentCounts(asTreated.plain)
            w.key("rich_devices"); w.int(asTreated.richDevices)
            w.key("plain_devices"); w.int(asTreated.plainDevices)
            w.key("metrics"); w.array(asTreated.metrics) { w, metric in w.metricComparison(metric) }
            w.key("device_clustered")
            w.objects(asTreated.deviceClustered) { w, comparison in
                w.key("metric"); w.string(comparison.metric.rawValue)
                w.key("shared_devices"); w.int(comparison.sharedDevices)
                w.key("difference"); w.clustered(comparison.difference)
                w.key("ratio"); w.clustered(comparison.ratio)
                w.key("unavailable"); w.optionalString(comparison.unavailable)
            }
        }
        w.key("excluded")
        w.object { w in
            w.key("other_experiment"); w.int(excluded.otherExperiment)
            w.key("unknown_arm"); w.int(excluded.unknownArm)
            w.key("outside_categories"); w.int(excluded.outsideCategories)
        }
        w.endObject()
        return w.bytes
    }
}

private extension JSONWriter {
    mutating func experimentCounts(_ counts: FunnelCounts) {
        object { w in
            for stage in FunnelStage.allCases { w.key(stage.name); w.int(counts[stage]) }
        }
    }

    mutating func rate(_ rate: ExperimentRate) {
        object { w in
            w.key("successes"); w.int(rate.successes)
            w.key("trials"); w.int(rate.trials)
            w.key("devices"); w.int(rate.devices)
            w.key("rate"); w.optionalDouble(rate.rate)
        }
    }

    mutating func clustered(_ effect: ClusteredEffect?) {
        optionalObject(effect) { w, effect in
            w.key("estimate"); w.double(effect.effect.estimate)
            w.key("lower"); w.double(effect.effect.interval.lower)
            w.key("upper"); w.double(effect.effect.interval.upper)
            w.key("p_value"); w.double(effect.effect.pValue)
            w.key("design_effect"); w.double(effect.designEffect)
        }
    }

    mutating func test(_ test: LiftTestResult?) {
        optionalObject(test) { w, test in
            w.key("lower"); w.double(test.interval.lower)
            w.key("upper"); w.double(test.interval.upper)
            w.key("p_value"); w.double(test.pValue)
            w.key("p_value_unadjusted"); w.double(test.unadjustedPValue)
        }
    }

    mutating func lift(_ lift: ExperimentLiftResult?) {
        optionalObject(lift) { w, lift in
            w.key("estimate"); w.double(lift.estimate)
            w.key("standard_error"); w.double(lift.standardError)
            w.tests(fixed: lift.fixedHorizon, sequential: lift.sequential, chanceToWin: lift.chanceToWin)
            w.key("degrees_of_freedom"); w.double(lift.degreesOfFreedom)
            w.key("credible_interval")
            w.object { w in
                w.key("lower"); w.double(lift.credibleInterval.lower)
                w.key("upper"); w.double(lift.credibleInterval.upper)
            }
            w.key("risk_control"); w.double(lift.controlRisk)
            w.key("risk_treatment"); w.double(lift.treatmentRisk)
        }
    }

    mutating func metricComparison(_ comparison: ExperimentMetricComparison) {
        beginObject()
        key("metric"); string(comparison.metric.rawValue)
        switch comparison.role {
        case .primary:
            key("role"); string("primary")
            key("direction"); null()
        case .guardrail(let direction):
            key("role"); string("guardrail")
            key("direction"); string(direction.rawValue)
        case .observational:
            key("role"); string("observational")
            key("direction"); null()
        }
        key("confidence"); double(comparison.confidence)
        key("p_value_correction"); string(comparison.correction.label)
        key("control"); rate(comparison.control)
        key("variant"); rate(comparison.variant)
        key("absolute"); lift(comparison.absolute)
        key("relative"); lift(comparison.relative)
        key("unavailable"); optionalString(comparison.unavailable)
        key("guardrail_violated"); bool(comparison.isGuardrailViolated)
        key("guardrail_untested_and_worse"); bool(comparison.isGuardrailUntestedAndWorse)
        key("decision_scale"); string(EffectScale.logRatio.rawValue)
        key("log_ratio"); decisionLift(comparison.logRatio)
        key("not_enough_data"); bool(comparison.isNotEnoughData)
        key("cuped"); cuped(comparison.cuped)
        endObject()
    }

    mutating func cuped(_ cuped: ExperimentCupedResult?) {
        optionalObject(cuped) { w, cuped in
            w.key("theta"); w.double(cuped.theta)
            w.key("variance_reduction"); w.optionalDouble(cuped.varianceReduction)
            w.key("relative_variance_reduction"); w.optionalDouble(cuped.relativeVarianceReduction)
            w.key("absolute_variance_reduction"); w.optionalDouble(cuped.absoluteVarianceReduction)
        }
    }

    mutating func decisionLift(_ lift: ExperimentDecisionLift?) {
        optionalObject(lift) { w, lift in
            w.key("estimate"); w.double(lift.estimate)
            w.key("log_estimate"); w.double(lift.logEstimate)
            w.key("log_standard_error"); w.double(lift.logStandardError)
            w.key("degrees_of_freedom"); w.double(lift.degreesOfFreedom)
            w.tests(fixed: lift.fixedHorizon, sequential: lift.sequential, chanceToWin: lift.chanceToWin)
        }
    }

    /// The keys every lift has: its two tests and its chance to win.
    mutating func tests(fixed: LiftTestResult, sequential: LiftTestResult?, chanceToWin: Double) {
        key("fixed"); test(fixed)
        key("sequential"); test(sequential)
        key("chance_to_win"); double(chanceToWin)
    }
}
