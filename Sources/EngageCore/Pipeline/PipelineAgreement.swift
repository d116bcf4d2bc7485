/// How well the model reproduces what devices recorded.
public enum PipelineAgreement {
    /// A prediction agrees with a recorded delivery when their outcomes are equal.
    public static func compare(recorded: DeliveredDetails, predicted: PipelineOutcome) -> Bool {
        recorded.outcome == predicted.outcome
    }

    /// Counts of recorded against predicted outcomes; mergeable, so shards can be tallied apart.
    public struct Accumulator: Sendable, Hashable {
        /// `counts[recorded * n + predicted]` with `n` outcomes in `DeliveryOutcome.allCases` order.
        public private(set) var counts: [Int]
        public private(set) var total: Int
        public private(set) var agreed: Int

        public init() {
            counts = [Int](repeating: 0, count: Accumulator.outcomes.count * Accumulator.outcomes.count)
            total = 0
            agreed = 0
        }

        static let outcomes = DeliveryOutcome.allCases

        static func position(_ outcome: DeliveryOutcome) -> Int {
            switch outcome {
            case .attached: 0
            case .timeout: 1
            case .tooLarge: 2
            case .unsupportedFormat: 3
            case .downloadFailed: 4
            case .notRequested: 5
            }
        }

        /// Records one comparison and returns whether it agreed.
        @discardableResult
        public mutating func record(recorded: DeliveredDetails, predicted: PipelineOutcome) -> Bool {
            let row = Accumulator.position(recorded.outcome)
            let column = Accumulator.position(predicted.outcome)
            counts[row * Accumulator.outcomes.count + column] += 1
            total += 1
            let agrees = PipelineAgreement.compare(recorded: recorded, predicted: predicted)
            if agrees { agreed += 1 }
            return agrees
        }

        /// How often the device recorded `recorded` where the model predicted `predicted`.
        public func count(recorded: DeliveryOutcome, predicted: DeliveryOutcome) -> Int {
            counts[Accumulator.position(recorded) * Accumulator.outcomes.count + Accumulator.position(predicted)]
        }

        /// The share of comparisons that agreed; nil before any.
        public var rate: Double? {
            total == 0 ? nil : Double(agreed) / Double(total)
        }

        public mutating func merge(_ other: Accumulator) {
            for i in counts.indices { counts[i] += other.counts[i] }
            total += other.total
            agreed += other.agreed
        }
    }
}
