extension EngagementReport {
    /// The report as compact JSON (UTF-8). Every key is always present, in the order below;
    /// numbers are JSON numbers (rates and shares as fractions, not percent), and values that
    /// are undefined for the data (no denominator, a relative lift over a plain rate of 0, ...)
    /// are `null`, never NaN.
    ///
    ///     {
    ///       "report": "engagement", "version": 1,
    ///       "generated_at": "2026-11-29T20:00:00Z",
    ///       "current_as_of": {"checkpoint_at": "2026-11-29T19:59:58Z" | null, "lag_events": n,
    ///                         "lag_seconds": x} | null,   // null when not read from a read model
    ///       "grouping": "category" | "attachment" | "day" | "action",
    ///       "filters": {"app_ids": [..], "categories": [..], "attachment_kinds": [..],
    ///                   "from": "YYYY-MM-DD" | null, "through": "YYYY-MM-DD" | null},
    ///       "confidence": 0.95, "alpha": 0.05, "rate_denominator": "displayed",
    ///       "caveat": "...", "note": "...",
    ///       "groups": [GROUP, ...], "total": GROUP,
    ///       "telemetry": [TELEMETRY, ...],               // per category and attachment kind
    ///       "telemetry_by_attachment": [TELEMETRY, ...], // category null
    ///       "telemetry_total": TELEMETRY,                // category and attachment_kind null
    ///       "stratified_note": "...",
    ///       "stratified": [SUMMARY, ...]                 // one per metric of "total", the headline
    ///     }
    ///     GROUP = {"category": s | null, "attachment_kind": s | null, "day": "YYYY-MM-DD" | null,
    ///              "rich": COUNTS, "plain": COUNTS, "not_displayed": COUNTS, "metrics": [METRIC, ...],
    ///              "crude": bool}                   // true for "total": categories pooled
    ///     COUNTS = {"<stage>": n, ... (`FunnelStage.keptPerBucket`: notifications, delivered,
    ///               displayed, expanded, actioned, opened, dismissed, replied),
    ///               "actions": {"<action id>": n, ...}}
    ///     METRIC = {"metric": "expansion" | "action" | "open" | "dismiss" | "reply" | "action:<id>",
    ///               "rich": RATE, "plain": RATE, "not_displayed_count": n,
    ///               "absolute_lift", "absolute_lower", "absolute_upper",
    ///               "relative_lift", "relative_lower", "relative_upper", "p_value": x | null,
    ///               "significant": bool | null, "small_sample": bool,
    ///               "method": "miettinen_nurminen_score" | "device_clustered",   // of relative_*, ratio_*, p_value, significant
    ///               "ratio", "ratio_lower", "ratio_upper": x | null,
    ///               "unit": "device" | "notification", "design_effect": x | null}
    ///     SUMMARY = {"metric": .., "headline": s, "categories": [CATEGORY, ...],
    ///                "excluded": [{"category": s, "reason": "no_trials" | "no_variant_trials" | "no_control_trials"}],
    ///                "risk_ratio": EFFECT | null, "risk_difference": EFFECT | null,
    ///                "cmh": {"statistic": x, "df": x, "p_value": x} | null,
    ///                "homogeneity": {"test": "cochran_q_log_ratio", "statistic": x, "df": x, "p_value": x,
    ///                                "i_squared": x, "categories_disagree": bool, "disagreeing": [s, ...],
    ///                                "excluded": [{"category": s, "reason": "zero_cell"}]} | null,
    ///                "pointing_other_way": [s, ...], "crude_ratio": EFFECT | null,
    ///                "crude_disagreement": {"direction": bool, "significance": bool, "text": s} | null,
    ///                "unavailable": s | null, "small_sample": bool, "unit": "device" | "notification",
    ///                "design_effect": {"risk_difference": x, "risk_ratio": x} | null}
    ///     CATEGORY = {"category": s, "rich": RATE, "plain": RATE, "ratio": EFFECT | null}
    ///     EFFECT = {"scale": "ratio" | "difference", "method": s, "estimate": x, "lower": x, "upper": x,
    ///               "p_value": x, "significant": bool}
    ///     RATE = {"successes": n, "trials": n, "rate": x | null, "lower": x | null, "upper": x | null}
    ///     TELEMETRY = {"category": s | null, "attachment_kind": s | null, "delivered": n,
    ///                  "outcomes": {"attached": OUTCOME, "timeout": .., "too_large": ..,
    ///                               "unsupported_format": .., "download_failed": .., "not_requested": ..},
    ///                  "timeout_share", "too_large_share": x | null, "time_will_expire": n,
    ///                  "download_ms": LATENCY, "processing_ms": LATENCY,
    ///                  "cache_hits": n, "network_fetches": n, "cache_hit_rate": x | null,
    ///                  "bytes_total": n, "bytes_reported": n, "bytes_mean": x | null}
    ///     OUTCOME = {"count": n, "share": x | null}
    ///     LATENCY = {"count": n, "p50": x | null, "p95": x | null, "p99": x | null}
    public func renderJSON() -> [UInt8] {
        var json = JSONWriter(capacity: 4096)
        json.beginObject()
        json.key("report"); json.string("engagement")
        json.key("version"); json.int(1)
        json.key("generated_at"); json.string(generatedAt.rfc3339)
        json.key("current_as_of"); json.freshness(currentAsOf)
        json.key("grouping"); json.string(grouping.rawValue)
        json.key("filters")
        json.beginObject()
        json.key("app_ids"); json.strings(filters.appIDs.sorted())
        json.key("categories"); json.strings(filters.categories.sorted())
        json.key("attachment_kinds"); json.strings(filters.attachmentKinds.sorted(by: AttachmentOrder.precedes))
        json.key("from"); json.optionalString(filters.from?.description)
        json.key("through"); json.optionalString(filters.through?.description)
        json.endObject()
        json.key("confidence"); json.double(Self.confidence)
        json.key("alpha"); json.double(Self.alpha)
        json.key("rate_denominator"); json.string("displayed")
        json.key("caveat"); json.string(Self.caveat)
        json.key("note"); json.string(Self.denominatorNote)
        json.key("groups")
        json.beginArray()
        for group in groups { json.group(group) }
        json.endArray()
        json.key("total"); json.group(total, crude: true)
        json.key("telemetry")
        json.beginArray()
        for summary in telemetry { json.telemetry(summary) }
        json.endArray()
        json.key("telemetry_by_attachment")
        json.beginArray()
        for summary in telemetryByAttachment { json.telemetry(summary) }
        json.endArray()
        json.key("telemetry_total"); json.telemetry(telemetryTotal)
        json.key("stratified_note"); json.string(Self.stratifiedNote)
        json.key("stratified")
        json.beginArray()
        for summary in stratified { json.stratified(summary) }
        json.endArray()
        json.endObject()
        return json.bytes
    }
}

private extension JSONWriter {
    mutating func freshness(_ freshness: ReportFreshness?) {
        guard let freshness else { return null() }
        beginObject()
        key("checkpoint_at"); optionalString(freshness.checkpointAt?.rfc3339)
        key("lag_events"); int(freshness.lagEvents)
        key("lag_seconds"); double(freshness.lagSeconds)
        endObject()
    }

    mutating func group(_ group: ReportGroup, crude: Bool = false) {
        beginObject()
        key("category"); optionalString(group.key.category)
        key("attachment_kind"); optionalString(group.key.attachmentKind)
        key("day"); optionalString(group.key.day?.description)
        key("rich"); counts(group.rich)
        key("plain"); counts(group.plain)
        key("not_displayed"); counts(group.notDisplayed)
        key("metrics")
        beginArray()
        for metric in group.metrics { comparison(metric) }
        endArray()
        key("crude"); bool(crude)
        endObject()
    }

    mutating func counts(_ counts: PresentationCounts) {
        beginObject()
        for stage in FunnelStage.keptPerBucket {
            key(stage.name); int(counts[stage])
        }
        key("actions")
        beginObject()
        for id in counts.actions.keys.sorted() {
            key(id); int(counts.actions[id]!)
        }
        endObject()
        endObject()
    }

    mutating func comparison(_ metric: MetricComparison) {
        beginObject()
        key("metric"); string(metric.metric.key)
        key("rich"); rate(metric.rich)
        key("plain"); rate(metric.plain)
        key("not_displayed_count"); int(metric.notDisplayedCount)
        key("absolute_lift"); optionalDouble(metric.absoluteLift)
        key("absolute_lower"); optionalDouble(metric.absoluteInterval?.lower)
        key("absolute_upper"); optionalDouble(metric.absoluteInterval?.upper)
        key("relative_lift"); optionalDouble(metric.relativeLift)
        key("relative_lower"); optionalDouble(metric.relativeInterval?.lower)
        key("relative_upper"); optionalDouble(metric.relativeInterval?.upper)
        key("p_value"); optionalDouble(metric.pValue)
        key("significant"); optionalBool(metric.significant)
        key("small_sample"); bool(metric.smallSample)
        key("method"); string(metric.ratio?.method.rawValue ?? MetricComparison.method.rawValue)
        key("ratio"); optionalDouble(metric.ratio?.estimate)
        key("ratio_lower"); optionalDouble(metric.ratio?.interval.lower)
        key("ratio_upper"); optionalDouble(metric.ratio?.interval.upper)
        key("unit"); string(metric.unit.rawValue)
        key("design_effect"); optionalDouble(metric.designEffect)
        endObject()
    }

    mutating func stratified(_ summary: StratifiedMetricSummary) {
        beginObject()
        key("metric"); string(summary.metric.key)
        key("headline"); string(summary.headline)
        key("categories")
        beginArray()
        for category in summary.categories {
            beginObject()
            key("category"); string(category.name)
            key("rich"); rate(category.rich)
            key("plain"); rate(category.plain)
            key("ratio"); effect(category.ratio)
            endObject()
        }
        endArray()
        key("excluded")
        beginArray()
        for excluded in summary.excluded {
            beginObject()
            key("category"); string(excluded.name)
            key("reason"); string(excluded.reason.rawValue)
            endObject()
        }
        endArray()
        key("risk_ratio"); effect(summary.riskRatio)
        key("risk_difference"); effect(summary.riskDifference)
        key("cmh")
        optionalObject(summary.cochranMantelHaenszel) { json, test in json.chiSquare(test) }
        key("homogeneity")
        optionalObject(summary.homogeneity) { json, homogeneity in
            json.key("test"); json.string("cochran_q_log_ratio")
            json.chiSquare(homogeneity.test)
            json.key("i_squared"); json.double(homogeneity.inconsistency)
            json.key("categories_disagree"); json.bool(summary.categoriesDisagree)
            json.key("disagreeing"); json.strings(summary.disagreeing)
            json.key("excluded")
            json.beginArray()
            for excluded in summary.homogeneityExcluded {
                json.beginObject()
                json.key("category"); json.string(excluded.name)
                json.key("reason"); json.string(excluded.reason.rawValue)
                json.endObject()
            }
            json.endArray()
        }
        key("pointing_other_way"); strings(summary.pointingTheOtherWay)
        key("crude_ratio"); effect(summary.crude)
        key("crude_disagreement")
        optionalObject(summary.crudeDisagreement) { json, disagreement in
            json.key("direction"); json.bool(disagreement.direction)
            json.key("significance"); json.bool(disagreement.significance)
            json.key("text"); json.optionalString(summary.crudeWarning)
        }
        key("unavailable"); optionalString(summary.unavailable)
        key("small_sample"); bool(summary.smallSample)
        key("unit"); string(summary.unit.rawValue)
        key("design_effect")
        optionalObject(summary.designEffect) { json, effect in
            json.key("risk_difference"); json.double(effect.riskDifference)
            json.key("risk_ratio"); json.double(effect.riskRatio)
        }
        endObject()
    }

    /// `"statistic"`, `"df"`, `"p_value"`.
    mutating func chiSquare(_ test: ChiSquareTest) {
        key("statistic"); double(test.statistic)
        key("df"); double(test.degreesOfFreedom)
        key("p_value"); double(test.pValue)
    }

    mutating func effect(_ effect: EffectEstimate?) {
        optionalObject(effect) { json, effect in json.effectMembers(effect) }
    }

    private mutating func effectMembers(_ effect: EffectEstimate) {
        key("scale"); string(effect.scale.rawValue)
        key("method"); string(effect.method.rawValue)
        key("estimate"); double(effect.estimate)
        key("lower"); double(effect.interval.lower)
        key("upper"); double(effect.interval.upper)
        key("p_value"); double(effect.pValue)
        key("significant"); bool(effect.isSignificant)
    }

    mutating func rate(_ estimate: RateEstimate) {
        beginObject()
        key("successes"); int(estimate.successes)
        key("trials"); int(estimate.trials)
        key("rate"); optionalDouble(estimate.rate)
        key("lower"); optionalDouble(estimate.interval?.lower)
        key("upper"); optionalDouble(estimate.interval?.upper)
        endObject()
    }

    mutating func telemetry(_ summary: TelemetrySummary) {
        beginObject()
        key("category"); optionalString(summary.category)
        key("attachment_kind"); optionalString(summary.attachmentKind)
        key("delivered"); int(summary.delivered)
        key("outcomes")
        beginObject()
        for outcome in DeliveryOutcome.allCases {
            key(outcome.rawValue)
            beginObject()
            key("count"); int(summary.outcomes[outcome, default: 0])
            key("share"); optionalDouble(summary.share(of: outcome))
            endObject()
        }
        endObject()
        key("timeout_share"); optionalDouble(summary.timeoutShare)
        key("too_large_share"); optionalDouble(summary.tooLargeShare)
        key("time_will_expire"); int(summary.timeWillExpire)
        key("download_ms"); latency(summary.download)
        key("processing_ms"); latency(summary.processing)
        key("cache_hits"); int(summary.cacheHits)
        key("network_fetches"); int(summary.networkFetches)
        key("cache_hit_rate"); optionalDouble(summary.cacheHitRate)
        key("bytes_total"); int(Int(summary.totalBytes))
        key("bytes_reported"); int(summary.bytesReported)
        key("bytes_mean"); optionalDouble(summary.meanBytes)
        endObject()
    }

    mutating func latency(_ latency: LatencyPercentiles) {
        beginObject()
        key("count"); int(Int(latency.count))
        key("p50"); optionalDouble(latency.p50)
        key("p95"); optionalDouble(latency.p95)
        key("p99"); optionalDouble(latency.p99)
        endObject()
    }
}
