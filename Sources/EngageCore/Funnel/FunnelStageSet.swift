/// Stages a notification reached: one bit per stage, by raw value.
public struct FunnelStageSet: Sendable, Hashable, ExpressibleByArrayLiteral {
    public private(set) var bits: UInt16

    public init() {
        bits = 0
    }

    init(bits: UInt16) {
        self.bits = bits
    }

    public init(_ stages: some Sequence<FunnelStage>) {
        bits = 0
        for stage in stages { insert(stage) }
    }

    public init(arrayLiteral stages: FunnelStage...) {
        self.init(stages)
    }

    /// The stages of a notification with at least one event: `notifications`, `delivered` when
    /// it was, `displayed` (and `richDisplayed`) when a `displayed` event said so, and the
    /// engagements its events showed.
    public init(delivered: Bool, presentation: ObservedPresentation, engaged: FunnelStageSet) {
        self = engaged
        insert(.notifications)
        if delivered { insert(.delivered) }
        if presentation != .unknown { insert(.displayed) }
        if presentation == .rich { insert(.richDisplayed) }
    }

    /// The stages one action reaches: `opened` (the default action), `dismissed`, or
    /// `actioned` (an app-defined button), and `replied` when it carried a text input.
    public init(_ action: ActionDetails) {
        self.init()
        if action.isOpen { insert(.opened) }
        if action.isDismiss { insert(.dismissed) }
        if action.isCustom { insert(.actioned) }
        if action.textInputLength != nil { insert(.replied) }
    }

    public func contains(_ stage: FunnelStage) -> Bool {
        bits & Self.bit(stage) != 0
    }

    public mutating func insert(_ stage: FunnelStage) {
        bits |= Self.bit(stage)
    }

    public mutating func formUnion(_ other: FunnelStageSet) {
        bits |= other.bits
    }

    public func intersection(_ other: FunnelStageSet) -> FunnelStageSet {
        var result = self
        result.bits &= other.bits
        return result
    }

    /// Without the numerators whose metric's denominator was not reached: what the experiments
    /// count, where an expansion without its `displayed` event (or a rich display without its
    /// `delivered` event) counts for no rate.
    public var withinDenominators: FunnelStageSet {
        var result = self
        var missing = ~bits & Self.denominators
        while missing != 0 {
            result.bits &= ~Self.numeratorsByDenominator[missing.trailingZeroBitCount]
            missing &= missing - 1
        }
        return result
    }

    /// The number of different sets of stages.
    public static let combinations = 1 << FunnelStage.allCases.count

    /// The stages kept per bucket, as a set.
    public static let keptPerBucket = FunnelStageSet(FunnelStage.keptPerBucket)

    static func bit(_ stage: FunnelStage) -> UInt16 {
        1 << UInt16(stage.rawValue)
    }

    /// The denominators' bits.
    private static let denominators = EngagementMetric.allCases.reduce(UInt16(0)) { $0 | bit($1.denominator) }

    /// Lane `d`: the bits of the numerators divided by the stage of raw value `d`.
    private static let numeratorsByDenominator = EngagementMetric.allCases.reduce(SIMD16<UInt16>()) { masks, metric in
        var masks = masks
        masks[metric.denominator.rawValue] |= bit(metric.numerator)
        return masks
    }
}
