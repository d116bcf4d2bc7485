/// How many notifications reached each stage of the funnel: the one counts type of engage. One
/// notification's counts (0 or 1 per stage, -1 in a read-model delta), a read-model bucket, a
/// report group and an experiment arm are all `FunnelCounts`, and add up as vectors.
///
/// Which stages a notification's counts include depends on the reader: the engagement read model
/// counts every stage reached (`FunnelStageSet.keptPerBucket` of `NotificationState.reachedStages`),
/// the experiments only numerators whose denominator was reached (`withinDenominators`).
public struct FunnelCounts: Sendable, Hashable, AdditiveArithmetic, CustomStringConvertible {
    /// Lane `stage.rawValue` holds the stage's count; lanes past the last stage stay 0.
    private var lanes: SIMD16<Int>

    public init() {
        lanes = .zero
    }

    /// One notification that reached `stages`.
    public init(reached stages: FunnelStageSet) {
        self = Self.byStages[Int(stages.bits)]
    }

    /// These counts, 0 for the stages not named (tests and simulations).
    public init(_ counts: [FunnelStage: Int]) {
        lanes = .zero
        for (stage, count) in counts { self[stage] = count }
    }

    public subscript(stage: FunnelStage) -> Int {
        get { lanes[stage.rawValue] }
        set { lanes[stage.rawValue] = newValue }
    }

    /// The metric's numerator.
    public func successes(_ metric: EngagementMetric) -> Int {
        self[metric.numerator]
    }

    /// The metric's denominator.
    public func trials(_ metric: EngagementMetric) -> Int {
        self[metric.denominator]
    }

    /// Every metric's successes and trials at once.
    public var metricTrials: MetricTrials {
        let numerators = Self.numeratorLanes, denominators = Self.denominatorLanes
        var result = MetricTrials()
        for lane in 0..<MetricLanes.scalarCount {
            result.successes[lane] = lanes[numerators[lane]]
            result.trials[lane] = lanes[denominators[lane]]
        }
        return result
    }

    public static let zero = FunnelCounts()

    public static func + (a: FunnelCounts, b: FunnelCounts) -> FunnelCounts {
        var sum = a
        sum.lanes &+= b.lanes
        return sum
    }

    /// The sum with every count held at the bound instead of wrapping: for counts read back
    /// from storage, which may hold anything (a hand edit). The fold keeps its wrapping `+`.
    public func addingSaturated(_ other: FunnelCounts) -> FunnelCounts {
        var sum = self
        for lane in 0..<SIMD16<Int>.scalarCount { sum.lanes[lane].addSaturated(other.lanes[lane]) }
        return sum
    }

    public static func - (a: FunnelCounts, b: FunnelCounts) -> FunnelCounts {
        var difference = a
        difference.lanes &-= b.lanes
        return difference
    }

    /// `notifications=3 delivered=2 ...`.
    public var description: String {
        FunnelStage.allCases.map { "\($0.name)=\(self[$0])" }.joined(separator: " ")
    }

    /// The counts of every set of stages, by its bits: a lookup is cheaper per notification than
    /// the shifts it replaces, which this target's vector instructions do lane by lane.
    private static let byStages: [FunnelCounts] = (0..<FunnelStageSet.combinations).map { bits in
        var counts = FunnelCounts()
        counts.lanes = (SIMD16<Int>(repeating: bits) &>> SIMD16<Int>(0..<16)) & 1
        return counts
    }

    /// Each metric's numerator (denominator) stage by metric lane; lanes past the last metric
    /// point at the last lane of `lanes`, which no stage uses.
    private static let numeratorLanes = metricLanes(\.numerator)
    private static let denominatorLanes = metricLanes(\.denominator)

    private static func metricLanes(_ stage: (EngagementMetric) -> FunnelStage) -> MetricLanes {
        precondition(FunnelStage.allCases.count < SIMD16<Int>.scalarCount, "a lane of FunnelCounts must stay unused")
        var lanes = MetricLanes(repeating: SIMD16<Int>.scalarCount - 1)
        for (lane, metric) in EngagementMetric.allCases.enumerated() { lanes[lane] = stage(metric).rawValue }
        return lanes
    }
}
