/// The strategies, among the six of the event schema, whose choice for one push equals the
/// choice of the strategy being replayed; one bit per `AttachmentStrategy.allCases` position.
public struct StrategyMask: Sendable, Hashable {
    public var rawValue: UInt8

    public init(rawValue: UInt8 = 0) {
        self.rawValue = rawValue
    }

    public init(_ strategies: [AttachmentStrategy]) {
        self.init()
        for strategy in strategies { insert(strategy) }
    }

    public func contains(_ strategy: AttachmentStrategy) -> Bool {
        rawValue & StrategyMask.bit(strategy) != 0
    }

    public mutating func insert(_ strategy: AttachmentStrategy) {
        rawValue |= StrategyMask.bit(strategy)
    }

    static func bit(_ strategy: AttachmentStrategy) -> UInt8 {
        switch strategy {
        case .noAttachment: 1 << 0
        case .full: 1 << 1
        case .thumbnail: 1 << 2
        case .cached: 1 << 3
        case .adaptive: 1 << 4
        case .poster: 1 << 5
        }
    }
}

/// The displayed notifications of one experiment, by arm and by which strategies would have made
/// the replayed strategy's choice, for inverse-propensity estimates.
///
/// The logging policy: a device is assigned arm `a` with probability `p_a` (the tag's
/// `probability`) and the arm's strategy chooses the variant. The probability that it made the
/// choice the replayed strategy makes for push `i` is `P_i = sum of p_a over the arms whose
/// strategy chooses the same` (choices as the pipeline model makes them from the device's
/// estimated network and cache). A push whose own arm made that choice is "matched" and weighs
/// `1 / P_i`:
///
///     IPS   = sum_matched y_i / P_i / N
///     SNIPS = sum_matched y_i / P_i / sum_matched 1 / P_i
///
/// over the `N` displayed notifications of the experiment that some arm's strategy would have
/// handled like the replayed one (`P_i > 0`). The others cannot be estimated from the log at all:
/// `support` is the share of notifications that can, and below 1 the estimates describe only
/// that part (for example the pushes without media, which every strategy leaves plain).
///
/// Arms are assigned per device, so the device is the unit of the variances: with `A_j` the
/// device's `sum w_i y_i`, `N_j` its supported notifications and `C_j` its `sum w_i`,
///
///     Var(IPS)   = sum_j (A_j - IPS N_j)^2 / N^2
///     Var(SNIPS) = sum_j (A_j - SNIPS C_j)^2 / (sum w_i)^2
///
/// (the cluster-robust sandwich without small-sample factor, as the report's `DeviceMoments`).
/// The weights are known only once every arm's probability and strategy are, so each device's
/// counts per cell go into sums of products of cells (`crossMoments`), from which the sums of
/// squares above follow for any weights. Feed each device's notifications, then `endDevice()`.
public struct PropensityTally: Sendable, Equatable {
    public struct Arm: Sendable, Equatable {
        /// The first probability the tags carried; nil when none did.
        public var probability: Double?
        /// Tags carried a probability other than the first.
        public var probabilityVaries = false
        /// How often each strategy ran for the arm's deliveries.
        public var strategies: [AttachmentStrategy: Int] = [:]

        mutating func note(probability: Double?, strategy: AttachmentStrategy?) {
            if let probability {
                if let first = self.probability { probabilityVaries = probabilityVaries || first != probability }
                else { self.probability = probability }
            }
            if let strategy { strategies[strategy, default: 0] += 1 }
        }

        /// The strategy that ran most often (ties: the earlier in schema order).
        public var strategy: AttachmentStrategy? {
            AttachmentStrategy.allCases.filter { strategies[$0] != nil }.max { strategies[$0]! < strategies[$1]! }
        }
    }

    struct Key: Sendable, Hashable {
        var arm: String
        var mask: StrategyMask
    }

    /// The stages any metric counts (its numerator or denominator), in lane order: the lanes of
    /// `crossMoments`' products.
    static let momentStages: [FunnelStage] = FunnelStage.allCases.filter { stage in
        EngagementMetric.allCases.contains { $0.numerator == stage || $0.denominator == stage }
    }
    static let noProducts = [Double](repeating: 0, count: momentStages.count * momentStages.count)
    static let momentIndex: [FunnelStage: Int] = Dictionary(uniqueKeysWithValues: momentStages.enumerated().map { ($1, $0) })

    public let experimentID: String
    public private(set) var arms: [String: Arm] = [:]
    /// The cells, numbered in the order they were first seen, and their counts.
    private(set) var cellKeys: [Key] = []
    private var cellNumbers: [Key: Int] = [:]
    private(set) var cellCounts: [FunnelCounts] = []
    /// Over devices, per ordered pair of cells (`first << 32 | second`): `sum_j c_jk[a] c_jl[b]` for
    /// the stages `a`, `b` of `momentStages` (at `a * count + b`), `c_jk` device `j`'s counts in cell `k`.
    private(set) var crossMoments: [Int: [Double]] = [:]
    /// The counts of the device being fed, per cell number (a device has few).
    private var deviceCells: [DeviceCell] = []

    struct DeviceCell: Sendable, Equatable {
        var cell: Int
        var counts: FunnelCounts
    }

    public init(experimentID: String) {
        self.experimentID = experimentID
    }

    /// Notes one delivery's arm, probability and the strategy that ran (displayed or not).
    public mutating func noteDelivery(arm: String, probability: Double?, strategy: AttachmentStrategy?) {
        // In place: a copy of the entry would copy its dictionary on every delivery.
        arms[arm, default: Arm()].note(probability: probability, strategy: strategy)
    }

    /// An arm of the experiment's definition: one without a counted delivery (in the window or the
    /// categories replayed) still takes its share of `P_i`, which would otherwise be too small and
    /// the weights of the other arms' pushes too large. Arms the log named are left as logged.
    public mutating func addDesignArm(name: String, probability: Double, strategy: AttachmentStrategy) {
        guard arms[name] == nil else { return }
        var arm = Arm()
        arm.note(probability: probability, strategy: nil)
        // Its strategy, though it ran for no counted delivery.
        arm.strategies[strategy] = 0
        arms[name] = arm
    }

    /// Adds one displayed notification of `arm`, of the device being fed.
    public mutating func add(arm: String, mask: StrategyMask, counts: FunnelCounts) {
        let key = Key(arm: arm, mask: mask)
        let cell: Int
        if let known = cellNumbers[key] {
            cell = known
        } else {
            cell = cellKeys.count
            cellNumbers[key] = cell
            cellKeys.append(key)
            cellCounts.append(FunnelCounts())
        }
        cellCounts[cell] = cellCounts[cell] + counts
        if let index = deviceCells.firstIndex(where: { $0.cell == cell }) {
            deviceCells[index].counts = deviceCells[index].counts + counts
        } else {
            deviceCells.append(DeviceCell(cell: cell, counts: counts))
        }
    }

    /// Ends the device being fed: its counts join the cross moments.
    public mutating func endDevice() {
        guard !deviceCells.isEmpty else { return }
        let stages = Self.momentStages, count = stages.count
        func accumulate(_ products: inout [Double], _ firstCounts: FunnelCounts, _ secondCounts: FunnelCounts) {
            for a in 0..<count {
                let left = Double(firstCounts[stages[a]])
                guard left != 0 else { continue }
                for b in 0..<count { products[a * count + b] += left * Double(secondCounts[stages[b]]) }
            }
        }
        for first in deviceCells {
            for second in deviceCells {
                // In place (the dictionary's own storage): a copy of the entry would copy its array.
                accumulate(&crossMoments[first.cell << 32 | second.cell, default: Self.noProducts], first.counts, second.counts)
            }
        }
        deviceCells.removeAll(keepingCapacity: true)
    }

    /// Why no estimate can be made, or nil when one can.
    public var problem: String? {
        if cellKeys.isEmpty { return "no displayed notifications of the experiment were replayed" }
        for name in arms.keys.sorted() {
            let arm = arms[name]!
            if arm.probability == nil { return "arm \(name) was logged without its probability" }
            // Weighing every push by the first probability would bias the estimates when it
            // changed; a definition's weights cannot change, so this is a log to look at.
            if arm.probabilityVaries { return "arm \(name) was logged with more than one probability" }
            if arm.strategy == nil { return "arm \(name) was logged without a strategy" }
        }
        return nil
    }

    /// The estimates for `metric`; nil with `problem` set or when no notification is supported.
    public func estimate(_ metric: ExperimentMetric, confidence: Double) -> PropensityEstimate? {
        guard problem == nil else { return nil }
        // A device still being fed counts as ended.
        var tally = self
        tally.endDevice()
        let table = arms.mapValues { (probability: $0.probability!, strategy: $0.strategy!) }
        // Per supported cell: trials n, successes y, and the weight 1 / P of a matched cell (0 otherwise).
        var parts: [Int: (n: Double, y: Double, weight: Double)] = [:]
        var all = 0.0, units = 0.0
        for (cell, key) in cellKeys.enumerated() {
            let counts = cellCounts[cell]
            let n = Double(counts.trials(metric)), y = Double(counts.successes(metric))
            let propensity = table.values.reduce(0.0) { $0 + (key.mask.contains($1.strategy) ? $1.probability : 0) }
            all += n
            guard propensity > 0 else { continue }
            units += n
            let isMatched = table[key.arm].map { key.mask.contains($0.strategy) } == true
            parts[cell] = (n, y, isMatched ? 1 / propensity : 0)
        }
        let matched = parts.values.reduce(0.0) { $0 + ($1.weight > 0 ? $1.n : 0) }
        // No push whose own arm made the replayed choice: IPS would be 0 with no spread, a
        // certainty the log does not hold.
        guard units > 0, matched > 0 else { return nil }
        let weighted = parts.values.reduce(0.0) { $0 + $1.weight * $1.y }
        let weights = parts.values.reduce(0.0) { $0 + $1.weight * $1.n }

        // Over devices: sum A_j^2, sum A_j N_j, sum N_j^2, sum A_j C_j and sum C_j^2, from the
        // cross moments of the supported cells.
        let count = Self.momentStages.count
        let y = Self.momentIndex[metric.numerator]!, n = Self.momentIndex[metric.denominator]!
        var aa = 0.0, an = 0.0, nn = 0.0, ac = 0.0, cc = 0.0
        for (pair, products) in tally.crossMoments {
            guard let first = parts[pair >> 32], let second = parts[pair & 0xFFFF_FFFF] else { continue }
            aa += first.weight * second.weight * products[y * count + y]
            an += first.weight * products[y * count + n]
            nn += products[n * count + n]
            ac += first.weight * second.weight * products[y * count + n]
            cc += first.weight * second.weight * products[n * count + n]
        }
        let ips = weighted / units
        let ipsVariance = max(0, aa - 2 * ips * an + ips * ips * nn) / (units * units)
        var snips: Double?
        var snipsInterval: ConfidenceInterval?
        if weights > 0 {
            let mean = weighted / weights
            let spread = max(0, aa - 2 * mean * ac + mean * mean * cc)
            snips = mean
            snipsInterval = NormalInterval.around(mean, variance: spread / (weights * weights), confidence: confidence)
        }
        return PropensityEstimate(
            metric: metric, ips: ips,
            // Not clamped at 1: IPS can exceed 1 (a few matched pushes weighing 1 / P each), and a
            // bound clamped below the estimate would make an interval that leaves it out.
            ipsInterval: NormalInterval.around(ips, variance: ipsVariance, confidence: confidence, upperBound: .infinity),
            snips: snips, snipsInterval: snipsInterval, units: Int(units), matched: Int(matched),
            support: units / all)
    }
}

/// Inverse-propensity estimates of one metric under the replayed strategy, from one experiment's
/// randomized arms (see `PropensityTally`). Intervals are normal approximations with the device
/// as the unit.
public struct PropensityEstimate: Sendable, Equatable {
    public var metric: ExperimentMetric
    public var ips: Double
    public var ipsInterval: ConfidenceInterval
    /// Nil when no notification matched.
    public var snips: Double?
    public var snipsInterval: ConfidenceInterval?
    /// Supported displayed notifications of the experiment (the metric's trials).
    public var units: Int
    /// Those whose own arm made the replayed strategy's choice.
    public var matched: Int
    /// The share of the experiment's displayed notifications some arm's strategy would have
    /// handled like the replayed strategy: the part the estimates describe.
    public var support: Double
}
