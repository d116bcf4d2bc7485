/// What a strategy replay found. Every prediction in it is a model-based estimate: the pipeline
/// model's outcomes on estimated networks, and engagement derived from them.
public struct StrategyReplayResult: Sendable {
    /// The label every output carries on its predictions.
    public static let label = "model-based estimate"
    /// The engagement metrics estimated (every metric per displayed notification).
    public static let metrics = EngagementMetric.perDisplayed

    /// The replayed strategy's name.
    public let strategy: String
    public let settings: StrategyReplaySettings

    /// The log and its deliveries, as counted.
    public let counts: ReplayCounts
    /// Per category, by name.
    public let categories: [CategoryReplay]
    /// Per metric of `metrics`.
    public let engagement: [EngagementPrediction]
    /// Per experiment found in the log, by id.
    public let experiments: [ExperimentPropensity]

    init(strategy: String, settings: StrategyReplaySettings, totals: ReplayTotals) {
        self.strategy = strategy
        self.settings = settings
        counts = totals.counts
        categories = totals.categories.values.sorted { $0.name < $1.name }
        let confidence = settings.confidence
        let ranShares = totals.categories.mapValues(\.strategyThatRan)
        let replayedShares = totals.categories.mapValues(\.replayed)
        engagement = Self.metrics.map { metric in
            EngagementPrediction(
                metric: metric,
                observed: (totals.observed.successes(metric), totals.observed.trials(metric)),
                strategyThatRan: PredictedEngagement.estimate(metric, shares: ranShares,
                                                              engagement: totals.engagement, confidence: confidence),
                replayed: PredictedEngagement.estimate(metric, shares: replayedShares,
                                                       engagement: totals.engagement, confidence: confidence))
        }
        experiments = totals.experiments.keys.sorted().map { id in
            let tally = totals.experiments[id]!
            let estimates = Self.metrics.compactMap { tally.estimate($0, confidence: confidence) }
            return ExperimentPropensity(
                experimentID: id,
                arms: tally.arms.keys.sorted().map { name in
                    let arm = tally.arms[name]!
                    return ExperimentPropensity.Arm(name: name, strategy: arm.strategy, probability: arm.probability,
                                                    probabilityVaries: arm.probabilityVaries)
                },
                problem: tally.problem ?? (estimates.isEmpty
                    ? "no displayed notification of an arm whose strategy makes the choice \(strategy) makes" : nil),
                estimates: estimates)
        }
    }
}

/// Rich displays of one category: recorded, and predicted under each strategy.
public struct CategoryReplay: Sendable, Equatable {
    public var name: String
    public var recorded: RichShare
    public var strategyThatRan: RichShare
    public var replayed: RichShare
}

/// One engagement metric: as recorded over the replayed notifications, and as the model predicts
/// it under the strategy that ran (a check of the method) and under the replayed strategy.
public struct EngagementPrediction: Sendable {
    public var metric: ExperimentMetric
    public var observed: (successes: Int, trials: Int)
    public var strategyThatRan: PredictedEngagement
    public var replayed: PredictedEngagement

    public var observedRate: Double? {
        observed.trials == 0 ? nil : Double(observed.successes) / Double(observed.trials)
    }
}

/// Inverse-propensity estimates from one experiment's arms.
public struct ExperimentPropensity: Sendable, Equatable {
    public struct Arm: Sendable, Equatable {
        public var name: String
        public var strategy: AttachmentStrategy?
        public var probability: Double?
        public var probabilityVaries: Bool
    }

    public var experimentID: String
    public var arms: [Arm]
    /// Why there are no estimates; nil when there are.
    public var problem: String?
    /// Per metric of `StrategyReplayResult.metrics`; empty with `problem`.
    public var estimates: [PropensityEstimate]
}
