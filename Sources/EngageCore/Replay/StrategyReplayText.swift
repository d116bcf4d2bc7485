extension StrategyReplayResult {
    /// What every output says about its predictions.
    public static let caveat = "Model-based estimate: predicted figures come from the pipeline model run on each "
        + "device's network as estimated from its earlier deliveries, not from measurements; engagement "
        + "predictions further assume that a notification engages like the measured rich or plain "
        + "notifications of its category."

    static let engagementMethod = "per category, predicted rich share x rich rate + plain share x plain rate, "
        + "rates per displayed notification from experiment-tagged (randomized) notifications, else from all; "
        + "weighted by the category's deliveries"

    static let propensityMethod = "inverse-propensity (IPS) and self-normalised (SNIPS) estimates over an "
        + "experiment's displayed notifications: a notification whose arm made the same choice as the "
        + "replayed strategy weighs 1 / (sum of the probabilities of the arms that would have); only "
        + "notifications some arm would have handled that way count (support)"

    /// The result for a terminal; lines end with "\n".
    public func renderText() -> String {
        let model = "model: \(strategy)"
        var lines: [String] = []
        lines.append("STRATEGY REPLAY: \(strategy) (MODEL-BASED ESTIMATE)")
        lines.append(contentsOf: ReportFormat.wrap(Self.caveat, width: 100))
        lines.append("")
        let window = settings.countFrom.map { "since \($0.rfc3339)" } ?? "whole log"
        let categoryFilter = settings.categories.isEmpty ? "all categories" : settings.categories.sorted().joined(separator: ", ")
        lines.append("counted    \(window); \(categoryFilter)")
        lines.append("log        \(counts.events) events, \(counts.devices) devices, \(counts.notifications) notifications, \(counts.deliveries) deliveries replayed")
        var gaps: [String] = []
        if counts.deliveredWithoutSent > 0 { gaps.append("\(counts.deliveredWithoutSent) delivered without sent") }
        if counts.sentWithoutDelivery > 0 { gaps.append("\(counts.sentWithoutDelivery) sent without delivery") }
        if counts.withoutStrategy > 0 { gaps.append("\(counts.withoutStrategy) deliveries without a known strategy") }
        if counts.unexplainedCacheReads > 0 { gaps.append("\(counts.unexplainedCacheReads) cache reads the history does not explain") }
        if !gaps.isEmpty { lines.append("not used   " + gaps.joined(separator: "; ")) }

        lines.append("")
        lines.append("AGREEMENT: the model under the strategy that ran reproduces the recorded outcome of "
            + "\(ReportFormat.percent(counts.agreement.rate)) of \(counts.agreement.total) deliveries")
        var byStrategy: [String] = []
        for name in AttachmentStrategy.allCases {
            guard let tally = counts.agreementByStrategy[name] else { continue }
            byStrategy.append("\(name.rawValue) \(ReportFormat.percent(tally.rate)) of \(tally.total)")
        }
        if !byStrategy.isEmpty { lines.append("  by strategy: " + byStrategy.joined(separator: ", ")) }
        var misses: [(String, Int)] = []
        for recordedOutcome in DeliveryOutcome.allCases {
            for predicted in DeliveryOutcome.allCases where predicted != recordedOutcome {
                let count = counts.agreement.count(recorded: recordedOutcome, predicted: predicted)
                if count > 0 { misses.append(("\(recordedOutcome.rawValue) predicted \(predicted.rawValue)", count)) }
            }
        }
        if !misses.isEmpty {
            let top = misses.sorted { $0.1 > $1.1 }.prefix(4).map { "\($0.0) \($0.1)" }
            lines.append("  largest misses: " + top.joined(separator: ", "))
        }

        lines.append("")
        lines.append("DELIVERIES (model columns are model-based estimates)")
        var table = TextTable([.left, .right, .right, .right])
        table.append(["", "recorded", "model: strategy that ran", model])
        let columns = [counts.recorded, counts.strategyThatRan, counts.replayed]
        table.append(["deliveries"] + columns.map { String($0.deliveries) })
        table.append(["rich display rate"] + columns.map { ReportFormat.percent($0.richRate) })
        table.append(["hand-off p50 / p90 / p99 ms"] + columns.map { tally in
            tally.handoffPercentiles.map { "\($0.p50) / \($0.p90) / \($0.p99)" } ?? ReportFormat.missing
        })
        table.append(["bytes transferred"] + columns.map { ReportFormat.bytes($0.bytesTransferred.map(Double.init)) })
        table.append(["bytes per delivery"] + columns.map { ReportFormat.bytes($0.bytesPerDelivery) })
        table.append(["cache reads"] + columns.map { String($0.cacheReads) })
        for outcome in DeliveryOutcome.allCases {
            table.append(["outcome \(outcome.rawValue)"] + columns.map { String($0.outcomes[outcome] ?? 0) })
        }
        for failure in PipelineFailure.allCases where columns.contains(where: { ($0.failures[failure] ?? 0) > 0 }) {
            table.append(["failure \(failure.rawValue)", ReportFormat.missing]
                         + columns.dropFirst().map { String($0.failures[failure] ?? 0) })
        }
        lines.append(contentsOf: table.lines(indent: "  "))

        lines.append("")
        lines.append("RICH DISPLAY RATE BY CATEGORY (model columns are model-based estimates)")
        var categoryTable = TextTable([.left, .right, .right, .right, .right])
        categoryTable.append(["category", "deliveries", "recorded", "model: strategy that ran", model])
        for category in categories {
            categoryTable.append([category.name, String(category.recorded.deliveries),
                                  ReportFormat.percent(category.recorded.share),
                                  ReportFormat.percent(category.strategyThatRan.share),
                                  ReportFormat.percent(category.replayed.share)])
        }
        lines.append(contentsOf: categoryTable.lines(indent: "  "))

        lines.append("")
        lines.append("ENGAGEMENT PER DISPLAYED NOTIFICATION (MODEL-BASED ESTIMATE, 95% intervals)")
        lines.append(contentsOf: ReportFormat.wrap("method: " + Self.engagementMethod, width: 100).map { "  " + $0 })
        var engagementTable = TextTable([.left, .right, .right, .right])
        engagementTable.append(["metric", "recorded", "model: strategy that ran", model])
        for prediction in engagement {
            engagementTable.append([prediction.metric.rawValue, ReportFormat.percent(prediction.observedRate),
                                    Self.text(prediction.strategyThatRan), Self.text(prediction.replayed)])
        }
        lines.append(contentsOf: engagementTable.lines(indent: "  "))
        if let first = engagement.first {
            if first.replayed.excludedDeliveries > 0 {
                lines.append("  \(first.replayed.excludedDeliveries) deliveries left out: their category lacks rich or plain displays")
            }
            if !first.replayed.observationalCategories.isEmpty {
                lines.append("  rates not randomized (no experiment data) for: "
                    + first.replayed.observationalCategories.joined(separator: ", "))
            }
        }

        lines.append("")
        lines.append("INVERSE-PROPENSITY ESTIMATES FOR \(strategy) (MODEL-BASED ESTIMATE, 95% intervals)")
        lines.append(contentsOf: ReportFormat.wrap("method: " + Self.propensityMethod, width: 100).map { "  " + $0 })
        if experiments.isEmpty { lines.append("  no experiment-tagged notifications in the log") }
        for experiment in experiments {
            let arms = experiment.arms.map { arm in
                "\(arm.name)=\(arm.strategy?.rawValue ?? "?") p=\(arm.probability.map { ReportFormat.fixed($0, 3) } ?? "?")"
            }
            lines.append("  experiment \(experiment.experimentID): " + arms.joined(separator: ", "))
            if let problem = experiment.problem {
                lines.append("    no estimate: \(problem)")
                continue
            }
            var ipsTable = TextTable([.left, .right, .right, .right, .right])
            ipsTable.append(["metric", "IPS", "SNIPS", "matched / units", "support"])
            for estimate in experiment.estimates {
                ipsTable.append([estimate.metric.rawValue,
                                 Self.text(estimate.ips, estimate.ipsInterval),
                                 estimate.snips.map { Self.text($0, estimate.snipsInterval) } ?? ReportFormat.missing,
                                 "\(estimate.matched) / \(estimate.units)",
                                 ReportFormat.percent(estimate.support)])
            }
            lines.append(contentsOf: ipsTable.lines(indent: "    "))
            if let support = experiment.estimates.first?.support, support < 1 {
                lines.append("    support \(ReportFormat.percent(support)): the estimates describe only those notifications")
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    private static func text(_ prediction: PredictedEngagement) -> String {
        guard let rate = prediction.rate else { return ReportFormat.missing }
        return text(rate, prediction.interval)
    }

    private static func text(_ rate: Double, _ interval: ConfidenceInterval?) -> String {
        var text = ReportFormat.percent(rate)
        if let interval {
            text += " [" + ReportFormat.fixed(interval.lower * 100, 1) + "–" + ReportFormat.fixed(interval.upper * 100, 1) + "]"
        }
        return text
    }
}
