/// What the report needs, besides the counts, to take the device as the unit of its intervals
/// and p-values (issue 16 point 4), for one app's category over all days and attachment kinds:
/// per reported metric, the device moments of its rich and of its plain displayed notifications,
/// and the cross moments of devices with both.
///
/// The cluster is a device's notifications of the category over everything the read model
/// holds: a person's propensity to engage persists from day to day, so a device's days are not
/// independent. Devices of different apps are different clusters, so the moments of an app's
/// category add across apps (`merged`). A device with notifications in several categories is a
/// cluster per category here; the adjusted answer counts it once across categories with
/// `CategoryPairDeviceMoments` when they are given (docs/report.md, "The device as the unit").
public struct CategoryDeviceMoments: Sendable, Hashable {
    public var appID: String
    public var category: String
    public var rich: [EngagementMetric: DeviceMoments]
    public var plain: [EngagementMetric: DeviceMoments]
    /// First bucket rich, second plain.
    public var shared: [EngagementMetric: DeviceCrossMoments]

    public init(appID: String, category: String, rich: [EngagementMetric: DeviceMoments] = [:],
                plain: [EngagementMetric: DeviceMoments] = [:], shared: [EngagementMetric: DeviceCrossMoments] = [:]) {
        self.appID = appID
        self.category = category
        self.rich = rich
        self.plain = plain
        self.shared = shared
    }

    /// The moments of devices given by their counts (the reference the read model must equal).
    public init(appID: String, category: String, devices: some Sequence<DeviceCategoryCounts>) {
        self.init(appID: appID, category: category)
        for device in devices {
            for metric in EngagementMetric.reported {
                let rich = device.proportion(metric, .rich), plain = device.proportion(metric, .plain)
                self.rich[metric, default: DeviceMoments()].add(rich)
                self.plain[metric, default: DeviceMoments()].add(plain)
                shared[metric, default: DeviceCrossMoments()].add(first: rich, second: plain)
            }
        }
    }

    /// One category's moments over several apps (their devices are distinct clusters).
    static func merged(_ parts: [CategoryDeviceMoments], category: String) -> CategoryDeviceMoments {
        var merged = CategoryDeviceMoments(appID: "", category: category)
        for part in parts {
            merged.appID = merged.appID.isEmpty ? part.appID : merged.appID + "," + part.appID
            for metric in EngagementMetric.reported {
                merged.rich[metric] = (merged.rich[metric] ?? DeviceMoments()) + (part.rich[metric] ?? DeviceMoments())
                merged.plain[metric] = (merged.plain[metric] ?? DeviceMoments()) + (part.plain[metric] ?? DeviceMoments())
                merged.shared[metric] = (merged.shared[metric] ?? DeviceCrossMoments())
                    + (part.shared[metric] ?? DeviceCrossMoments())
            }
        }
        return merged
    }
}

/// One device's displayed notifications of one category, rich and plain, with the stages they
/// reached: a row of the read model's `engagement_devices`.
public struct DeviceCategoryCounts: Sendable, Hashable {
    public var rich = FunnelCounts()
    public var plain = FunnelCounts()

    public init(rich: FunnelCounts = FunnelCounts(), plain: FunnelCounts = FunnelCounts()) {
        self.rich = rich
        self.plain = plain
    }

    public var isZero: Bool { rich == .zero && plain == .zero }

    public static func + (a: DeviceCategoryCounts, b: DeviceCategoryCounts) -> DeviceCategoryCounts {
        DeviceCategoryCounts(rich: a.rich + b.rich, plain: a.plain + b.plain)
    }

    /// Adds a notification's engagement (or a negative one, to take it away); a notification
    /// not displayed counts for nothing here.
    public mutating func add(_ counts: FunnelCounts, presentation: ObservedPresentation) {
        switch presentation {
        case .rich: rich = rich + counts
        case .plain: plain = plain + counts
        case .unknown: break
        }
    }

    /// The device's successes of `trials` of the metric in one presentation.
    public func proportion(_ metric: EngagementMetric, _ presentation: ObservedPresentation) -> Proportion {
        let counts = presentation == .rich ? rich : presentation == .plain ? plain : FunnelCounts()
        let trials = max(0, counts.trials(metric))
        return Proportion(validatedSuccesses: min(max(0, counts.successes(metric)), trials), trials: trials)
    }
}

/// The per-device counts of the engagement read model, folded in memory from notifications'
/// contributions as they change: what `engagement_devices` must hold, and the moments
/// `engagement_device_moments` must hold (`moments`).
public struct DeviceMomentFold: Sendable {
    public struct Key: Sendable, Hashable, Comparable {
        public var appID: String
        public var category: String
        public var deviceID: String

        public init(appID: String, category: String, deviceID: String) {
            self.appID = appID
            self.category = category
            self.deviceID = deviceID
        }

        public static func < (a: Key, b: Key) -> Bool {
            (a.appID, a.category, a.deviceID) < (b.appID, b.category, b.deviceID)
        }
    }

    /// One side of a notification's change: the device it counts on and its contribution there
    /// (nil: not counted).
    public typealias Side = (device: String, contribution: EngagementContribution)?

    public private(set) var devices: [Key: DeviceCategoryCounts] = [:]

    public init() {}

    /// A notification of `appID` changed from `old` to `new`, each on its own device.
    public mutating func apply(appID: String, from old: Side, to new: Side) {
        for change in Self.changes(appID: appID, from: old, to: new) {
            let counts = (devices[change.key] ?? DeviceCategoryCounts()) + change.counts
            devices[change.key] = counts.isZero ? nil : counts
        }
    }

    /// The signed per-device changes of one notification's change (what the projector adds).
    public static func changes(appID: String, from old: Side, to new: Side) -> [(key: Key, counts: DeviceCategoryCounts)] {
        var result: [(key: Key, counts: DeviceCategoryCounts)] = []
        func add(_ side: Side, sign: Int) {
            guard let side, side.contribution.bucket.presentation != .unknown else { return }
            let funnel = side.contribution.counters.funnel
            var counts = DeviceCategoryCounts()
            counts.add(sign > 0 ? funnel : .zero - funnel, presentation: side.contribution.bucket.presentation)
            result.append((Key(appID: appID, category: side.contribution.bucket.category, deviceID: side.device), counts))
        }
        add(old, sign: -1)
        add(new, sign: 1)
        return result
    }

    /// The moments per app and category, ordered by app then category.
    public var moments: [CategoryDeviceMoments] {
        let byCategory = Dictionary(grouping: devices) { CategoryKey(appID: $0.key.appID, category: $0.key.category) }
        return byCategory.keys.sorted { ($0.appID, $0.category) < ($1.appID, $1.category) }.map { key in
            CategoryDeviceMoments(appID: key.appID, category: key.category, devices: byCategory[key]!.map(\.value))
        }
    }

    /// The cross moments of every two categories of each app, ordered by app then categories.
    public var pairMoments: [CategoryPairDeviceMoments] { CategoryPairDeviceMoments.pairs(of: devices) }

    private struct CategoryKey: Hashable {
        var appID: String
        var category: String
    }
}
