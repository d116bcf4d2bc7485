extension StrategyReplayResult {
    /// The result as one JSON object. Every object holding predictions carries
    /// `"label": "model-based estimate"`, and so does the top level.
    public func renderJSON() -> [UInt8] {
        var w = JSONWriter(capacity: 8_192)
        w.beginObject()
        w.key("label"); w.string(Self.label)
        w.key("note"); w.string(Self.caveat)
        w.key("strategy"); w.string(strategy)
        w.key("settings"); writeSettings(&w)
        w.key("log")
        w.beginObject()
        w.key("events"); w.int(counts.events)
        w.key("devices"); w.int(counts.devices)
        w.key("notifications"); w.int(counts.notifications)
        w.key("deliveries"); w.int(counts.deliveries)
        w.key("delivered_without_sent"); w.int(counts.deliveredWithoutSent)
        w.key("sent_without_delivery"); w.int(counts.sentWithoutDelivery)
        w.key("without_strategy"); w.int(counts.withoutStrategy)
        w.key("unexplained_cache_reads"); w.int(counts.unexplainedCacheReads)
        w.endObject()

        w.key("agreement")
        w.beginObject()
        w.key("description"); w.string("the pipeline model under the strategy that ran, against the recorded outcomes")
        Self.writeAgreement(counts.agreement, &w)
        w.key("by_strategy")
        w.beginObject()
        for name in AttachmentStrategy.allCases {
            guard let tally = counts.agreementByStrategy[name] else { continue }
            w.key(name.rawValue)
            w.beginObject()
            Self.writeAgreement(tally, &w)
            w.endObject()
        }
        w.endObject()
        w.key("confusion")
        w.beginArray()
        for recorded in DeliveryOutcome.allCases {
            for predicted in DeliveryOutcome.allCases {
                let count = counts.agreement.count(recorded: recorded, predicted: predicted)
                guard count > 0 else { continue }
                w.beginObject()
                w.key("recorded"); w.string(recorded.rawValue)
                w.key("predicted"); w.string(predicted.rawValue)
                w.key("count"); w.int(count)
                w.endObject()
            }
        }
        w.endArray()
        w.endObject()

        w.key("deliveries")
        w.beginObject()
        w.key("recorded"); Self.writeTally(counts.recorded, label: nil, strategy: nil, &w)
        w.key("strategy_that_ran"); Self.writeTally(counts.strategyThatRan, label: Self.label, strategy: nil, &w)
        w.key("replayed"); Self.writeTally(counts.replayed, label: Self.label, strategy: strategy, &w)
        w.endObject()

        w.key("categories")
        w.objects(categories) { w, category in
            w.key("category"); w.string(category.name)
            w.key("deliveries"); w.int(category.recorded.deliveries)
            w.key("recorded_rich_rate"); w.optionalDouble(category.recorded.share)
            w.key("strategy_that_ran_rich_rate"); w.optionalDouble(category.strategyThatRan.share)
            w.key("replayed_rich_rate"); w.optionalDouble(category.replayed.share)
            w.key("label"); w.string(Self.label)
        }

        w.key("engagement")
        w.beginObject()
        w.key("label"); w.string(Self.label)
        w.key("method"); w.string(Self.engagementMethod)
        w.key("metrics")
        w.objects(engagement) { w, prediction in
            w.key("metric"); w.string(prediction.metric.rawValue)
            w.key("definition"); w.string(prediction.metric.definition)
            w.key("recorded")
            w.object { w in
                w.key("rate"); w.optionalDouble(prediction.observedRate)
                w.key("successes"); w.int(prediction.observed.successes)
                w.key("trials"); w.int(prediction.observed.trials)
            }
            w.key("strategy_that_ran"); Self.writePrediction(prediction.strategyThatRan, &w)
            w.key("replayed"); Self.writePrediction(prediction.replayed, &w)
        }
        w.endObject()

        w.key("inverse_propensity")
        w.beginObject()
        w.key("label"); w.string(Self.label)
        w.key("method"); w.string(Self.propensityMethod)
        w.key("experiments")
        w.objects(experiments) { w, experiment in
            w.key("experiment"); w.string(experiment.experimentID)
            w.key("arms")
            w.objects(experiment.arms) { w, arm in
                w.key("arm"); w.string(arm.name)
                w.key("strategy"); w.optionalString(arm.strategy?.rawValue)
                w.key("probability"); w.optionalDouble(arm.probability)
                w.key("probability_varies"); w.bool(arm.probabilityVaries)
            }
            w.key("problem"); w.optionalString(experiment.problem)
            w.key("metrics")
            w.objects(experiment.estimates) { w, estimate in
                w.key("label"); w.string(Self.label)
                w.key("metric"); w.string(estimate.metric.rawValue)
                w.key("ips"); w.double(estimate.ips)
                w.key("ips_interval"); Self.interval(estimate.ipsInterval, &w)
                w.key("snips"); w.optionalDouble(estimate.snips)
                w.key("snips_interval"); if let i = estimate.snipsInterval { Self.interval(i, &w) } else { w.null() }
                w.key("units"); w.int(estimate.units)
                w.key("matched"); w.int(estimate.matched)
                w.key("support"); w.double(estimate.support)
            }
        }
        w.endObject()
        w.endObject()
        return w.bytes
    }

    private func writeSettings(_ w: inout JSONWriter) {
        w.beginObject()
        w.key("count_from"); if let from = settings.countFrom { w.string(from.rfc3339) } else { w.null() }
        w.key("categories"); w.strings(settings.categories.sorted())
        w.key("history_limit"); w.int(settings.historyLimit)
        w.key("cache_ttl_seconds"); w.int(settings.limits.cacheTTLSeconds)
        w.key("time_budget_ms"); w.int(settings.limits.timeBudgetMS)
        w.key("fallback_margin_ms"); w.int(settings.limits.fallbackMarginMS)
        w.key("confidence"); w.double(settings.confidence)
        w.endObject()
    }

    private static func writeAgreement(_ tally: PipelineAgreement.Accumulator, _ w: inout JSONWriter) {
        w.key("rate"); w.optionalDouble(tally.rate)
        w.key("agreed"); w.int(tally.agreed)
        w.key("total"); w.int(tally.total)
    }

    private static func writeTally(_ tally: DeliveryTally, label: String?, strategy: String?, _ w: inout JSONWriter) {
        w.beginObject()
        if let label { w.key("label"); w.string(label) }
        if let strategy { w.key("strategy"); w.string(strategy) }
        w.key("deliveries"); w.int(tally.deliveries)
        w.key("rich"); w.int(tally.rich)
        w.key("rich_rate"); w.optionalDouble(tally.richRate)
        w.key("handoff_ms")
        w.optionalObject(tally.handoffPercentiles) { w, p in
            w.key("p50"); w.int(p.p50)
            w.key("p90"); w.int(p.p90)
            w.key("p99"); w.int(p.p99)
        }
        w.key("bytes_transferred"); if let bytes = tally.bytesTransferred { w.int(bytes) } else { w.null() }
        w.key("bytes_per_delivery"); w.optionalDouble(tally.bytesPerDelivery)
        w.key("cache_reads"); w.int(tally.cacheReads)
        w.key("outcomes")
        w.beginObject()
        for outcome in DeliveryOutcome.allCases { w.key(outcome.rawValue); w.int(tally.outcomes[outcome] ?? 0) }
        w.endObject()
        if tally.bytesTransferred != nil {
            w.key("failures")
            w.beginObject()
            for failure in PipelineFailure.allCases { w.key(failure.rawValue); w.int(tally.failures[failure] ?? 0) }
            w.endObject()
        }
        w.endObject()
    }

    private static func writePrediction(_ prediction: PredictedEngagement, _ w: inout JSONWriter) {
        w.beginObject()
        w.key("label"); w.string(label)
        w.key("rate"); w.optionalDouble(prediction.rate)
        w.key("interval"); if let i = prediction.interval { interval(i, &w) } else { w.null() }
        w.key("deliveries"); w.int(prediction.deliveries)
        w.key("excluded_deliveries"); w.int(prediction.excludedDeliveries)
        w.key("observational_categories")
        w.beginArray()
        for category in prediction.observationalCategories { w.string(category) }
        w.endArray()
        w.endObject()
    }

    private static func interval(_ interval: ConfidenceInterval, _ w: inout JSONWriter) {
        w.beginArray()
        w.double(interval.lower)
        w.double(interval.upper)
        w.endArray()
    }
}
