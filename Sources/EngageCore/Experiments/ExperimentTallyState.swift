/// An experiment's tallies as kept between looks (issue 19): per tally (an arm, or rich and plain
/// as shown) each device's summed counts and the processing-time histogram's counts, and the
/// excluded notifications. Unlike `ExperimentTallies`, a notification can be taken out again, so
/// that when late events change what a notification reached (an expansion after its display, an
/// earlier event with another device or arm), its old observation is replaced by its new one.
/// `ExperimentTallies(definition:restoring:)` turns it into the tallies a replay would make.
public struct ExperimentTallyState: Sendable, Equatable {
    /// One of an experiment's tallies; `code` is how it is stored.
    public enum Key: Hashable, Sendable {
        case arm(Int)
        case rich
        case plain

        public var code: Int {
            switch self {
            case .arm(let position): position
            case .rich: -1
            case .plain: -2
            }
        }

        public init?(code: Int) {
            switch code {
            case -1: self = .rich
            case -2: self = .plain
            case 0...: self = .arm(code)
            default: return nil
            }
        }
    }

    /// A device in one tally.
    public struct DeviceKey: Hashable, Sendable {
        public var tally: Key
        public var deviceID: String
    }

    public let categories: Set<String>
    /// Each tally's devices with their counts; a device whose counts fall to zero is removed.
    public private(set) var devices: [Key: [String: FunnelCounts]] = [:]
    /// Each tally's `LatencyHistogram` counts of `processing_ms`.
    public private(set) var processing: [Key: [Int64]] = [:]
    public var notifications = 0
    public var otherExperiment = 0
    public var unknownArm = 0
    public var outsideCategories = 0
    /// Devices and histograms changed since the state was made or loaded: what to write back.
    public private(set) var changedDevices: Set<DeviceKey> = []
    public private(set) var changedHistograms: Set<Key> = []

    public init(definition: ExperimentDefinition) {
        categories = Set(definition.categories)
    }

    /// Sets a stored device's counts (loading; not a change).
    public mutating func load(_ tally: Key, device: String, counts: FunnelCounts) {
        devices[tally, default: [:]][device] = counts
    }

    /// Sets a stored histogram (loading; not a change), refused unless it has the standard
    /// layout's length and no negative count.
    public mutating func load(_ tally: Key, processingCounts counts: [Int64]) throws(StatisticsError) {
        processing[tally] = try LatencyHistogram(counts: counts).counts
    }

    /// Replaces a notification's contribution: `old` is what it was tallied as (nil: not yet),
    /// `new` what its events make of it now (nil: nothing).
    public mutating func replace(_ old: ExperimentObservation?, with new: ExperimentObservation?) {
        guard old != new else { return }
        if let old { apply(old, sign: -1) }
        if let new { apply(new, sign: 1) }
    }

    private mutating func apply(_ observation: ExperimentObservation, sign: Int) {
        notifications += sign
        switch ExperimentTallies.destination(of: observation, categories: categories) {
        case .otherExperiment: otherExperiment += sign
        case .outsideCategories: outsideCategories += sign
        case .unknownArm: unknownArm += sign
        case .arm(let position):
            apply(observation, to: .arm(position), sign: sign)
            switch observation.presentation {
            case .rich: apply(observation, to: .rich, sign: sign)
            case .plain: apply(observation, to: .plain, sign: sign)
            case .unknown: break
            }
        }
    }

    private mutating func apply(_ observation: ExperimentObservation, to tally: Key, sign: Int) {
        let counts = observation.counts
        let device = observation.deviceID
        let tallied = devices[tally]?[device] ?? .zero
        let updated = sign > 0 ? tallied + counts : tallied - counts
        // Every notification counts in `notifications`: a device without any has none left.
        // (Subscripts mutate in place: a copy of a tally's devices would cost a look its speed.)
        devices[tally, default: [:]][device] = updated[.notifications] == 0 ? nil : updated
        changedDevices.insert(DeviceKey(tally: tally, deviceID: device))
        if let milliseconds = observation.processingMS {
            let layout = LatencyHistogram.Layout.standard
            let bucket = layout.index(of: Double(milliseconds))
            // A stored bucket may hold anything (a hand edit): held at the bound, never trapping.
            processing[tally, default: Array(repeating: 0, count: layout.countsLength)][bucket].addSaturated(Int64(sign))
            changedHistograms.insert(tally)
        }
    }
}
