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
///               "guardrail_violated": bool, "decision_scale": "log_ratio", "log_ratio": LOG_RATIO | null,
///               "not_enough_data": bool, "cuped": CUPED | null}
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
        w.beginObject()
        w.key("code"); w.string(decision.code)
        w.key("arm")
        if case .ship(let arm) = decision { w.string(arm) } else { w.null() }
        w.key("reason")
        if case .stopNoEffect(let reason) = decision { w.string(reason.rawValue) } else { w.null() }
        w.key("rationale"); w.string(rationale)
        w.endObject()
        w.key("sample_ratio_mismatch")
        w.beginObject()
        w.key("p_value"); w.double(sampleRatioMismatchPValue)
        w.key("threshold"); w.double(ExperimentAnalysis.sampleRatioMismatchThreshold)
        w.key("mismatch"); w.bool(hasSampleRatioMismatch)
        w.endObject()
        w.key("arms")
        w.beginArray()
        for arm in arms {
            w.beginObject()
            w.key("name"); w.string(arm.name)
            w.key("strategy"); w.string(arm.strategy.rawValue)
            w.key("control"); w.bool(arm.isControl)
            w.key("weight"); w.double(arm.weight)
            w.key("devices"); w.int(arm.devices)
            w.key("counts"); w.experimentCounts(arm.counts)
            w.key("processing_ms_p50"); w.optionalDouble(arm.processingP50)
            w.key("processing_ms_p95"); w.optionalDouble(arm.processingP95)
            w.endObject()
        }
        w.endArray()
        w.key("cuped")
        if let window = cupedWindow {
            w.beginObject()
            w.key("pre_period_from"); w.string(window.from.rfc3339)
            w.key("pre_period_to"); w.string(window.to.rfc3339)
            w.key("pre_period_days"); w.int(window.days)
            w.key("devices_with_history"); w.int(window.devicesWithHistory)
            w.endObject()
        } else {
            w.null()
        }
        w.key("intent_to_treat")
        w.beginArray()
        for comparison in comparisons {
            w.beginObject()
            w.key("arm"); w.string(comparison.arm)
            w.key("strategy"); w.string(comparison.strategy.rawValue)
            w.key("metrics")
            w.beginArray()
            for metric in comparison.metrics { w.metricComparison(metric) }
            w.endArray()
            w.endObject()
        }
        w.endArray()
        w.key("as_treated")
        w.beginObject()
        w.key("label"); w.string(ExperimentAsTreatedResult.label)
        w.key("rich"); w.experimentCounts(asTreated.rich)
        w.key("plain"); w.experimentCounts(asTreated.plain)
        w.key("rich_devices"); w.int(asTreated.richDevices)
        w.key("plain_devices"); w.int(asTreated.plainDevices)
        w.key("metrics")
        w.beginArray()
        for metric in asTreated.metrics { w.metricComparison(metric) }
        w.endArray()
        w.key("device_clustered")
        w.beginArray()
        for comparison in asTreated.deviceClustered {
            w.beginObject()
            w.key("metric"); w.string(comparison.metric.rawValue)
            w.key("shared_devices"); w.int(comparison.sharedDevices)
            w.key("difference"); w.clustered(comparison.difference)
            w.key("ratio"); w.clustered(comparison.ratio)
            w.key("unavailable")
            if let unavailable = comparison.unavailable { w.string(unavailable) } else { w.null() }
            w.endObject()
        }
        w.endArray()
        w.endObject()
        w.key("excluded")
        w.beginObject()
        w.key("other_experiment"); w.int(excluded.otherExperiment)
        w.key("unknown_arm"); w.int(excluded.unknownArm)
        w.key("outside_categories"); w.int(excluded.outsideCategories)
        w.endObject()
        w.endObject()
        return w.bytes
    }
}

private extension JSONWriter {
    mutating func experimentCounts(_ counts: FunnelCounts) {
        beginObject()
        for stage in FunnelStage.allCases {
            key(stage.name); int(counts[stage])
        }
        endObject()
    }

    mutating func rate(_ rate: ExperimentRate) {
        beginObject()
        key("successes"); int(rate.successes)
        key("trials"); int(rate.trials)
        key("devices"); int(rate.devices)
        key("rate"); optionalDouble(rate.rate)
        endObject()
    }

    mutating func clustered(_ effect: ClusteredEffect?) {
        guard let effect else { return null() }
        beginObject()
        key("estimate"); double(effect.effect.estimate)
        key("lower"); double(effect.effect.interval.lower)
        key("upper"); double(effect.effect.interval.upper)
        key("p_value"); double(effect.effect.pValue)
        key("design_effect"); double(effect.designEffect)
        endObject()
    }

    mutating func test(_ test: LiftTestResult?) {
        guard let test else { return null() }
        beginObject()
        key("lower"); double(test.interval.lower)
        key("upper"); double(test.interval.upper)
        key("p_value"); double(test.pValue)
        key("p_value_unadjusted"); double(test.unadjustedPValue)
        endObject()
    }

    mutating func lift(_ lift: ExperimentLiftResult?) {
        guard let lift else { return null() }
        beginObject()
        key("estimate"); double(lift.estimate)
        key("standard_error"); double(lift.standardError)
        tests(fixed: lift.fixedHorizon, sequential: lift.sequential, chanceToWin: lift.chanceToWin)
        key("degrees_of_freedom"); double(lift.degreesOfFreedom)
        key("credible_interval")
        beginObject()
        key("lower"); double(lift.credibleInterval.lower)
        key("upper"); double(lift.credibleInterval.upper)
        endObject()
        key("risk_control"); double(lift.controlRisk)
        key("risk_treatment"); double(lift.treatmentRisk)
        endObject()
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
        key("unavailable")
        if let unavailable = comparison.unavailable { string(unavailable) } else { null() }
        key("guardrail_violated"); bool(comparison.isGuardrailViolated)
        key("decision_scale"); string(EffectScale.logRatio.rawValue)
        key("log_ratio"); decisionLift(comparison.logRatio)
        key("not_enough_data"); bool(comparison.isNotEnoughData)
        key("cuped"); cuped(comparison.cuped)
        endObject()
    }

    mutating func cuped(_ cuped: ExperimentCupedResult?) {
        guard let cuped else { return null() }
        beginObject()
        key("theta"); double(cuped.theta)
        key("variance_reduction"); optionalDouble(cuped.varianceReduction)
        key("relative_variance_reduction"); optionalDouble(cuped.relativeVarianceReduction)
        key("absolute_variance_reduction"); optionalDouble(cuped.absoluteVarianceReduction)
        endObject()
    }


    mutating func decisionLift(_ lift: ExperimentDecisionLift?) {
        guard let lift else { return null() }
        beginObject()
        key("estimate"); double(lift.estimate)
        key("log_estimate"); double(lift.logEstimate)
        key("log_standard_error"); double(lift.logStandardError)
        key("degrees_of_freedom"); double(lift.degreesOfFreedom)
        tests(fixed: lift.fixedHorizon, sequential: lift.sequential, chanceToWin: lift.chanceToWin)
        endObject()
    }

    /// The keys every lift has: its two tests and its chance to win.
    mutating func tests(fixed: LiftTestResult, sequential: LiftTestResult?, chanceToWin: Double) {
        key("fixed"); test(fixed)
        key("sequential"); test(sequential)
        key("chance_to_win"); double(chanceToWin)
    }
}
