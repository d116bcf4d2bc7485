/// What the adjusted answer needs, besides each category's `CategoryDeviceMoments`, to count a
/// device once across categories: for one app and two of its categories, per reported metric,
/// the cross moments over devices of the first category's buckets with the second's.
///
/// A device that engages readily does so in every category, so the categories' rates move
/// together through the devices they share, and the Mantel-Haenszel estimate's variance needs
/// those covariances (the cluster-robust sandwich over devices of the stratified estimate;
/// docs/report.md, "The device as the unit"). Only devices with notifications in both
/// categories contribute (a device absent from one adds 0 to every product).
public struct CategoryPairDeviceMoments: Sendable, Hashable {
    /// One metric's cross moments of the two categories' presentations (first category's
    /// presentation, then the second's).
    public struct Cross: Sendable, Hashable {
        public var richRich = DeviceCrossMoments()
        public var richPlain = DeviceCrossMoments()
        public var plainRich = DeviceCrossMoments()
        public var plainPlain = DeviceCrossMoments()

        public init(richRich: DeviceCrossMoments = DeviceCrossMoments(), richPlain: DeviceCrossMoments = DeviceCrossMoments(),
                    plainRich: DeviceCrossMoments = DeviceCrossMoments(), plainPlain: DeviceCrossMoments = DeviceCrossMoments()) {
            self.richRich = richRich
            self.richPlain = richPlain
            self.plainRich = plainRich
            self.plainPlain = plainPlain
        }

        public static func + (a: Cross, b: Cross) -> Cross {
            Cross(richRich: a.richRich + b.richRich, richPlain: a.richPlain + b.richPlain,
                  plainRich: a.plainRich + b.plainRich, plainPlain: a.plainPlain + b.plainPlain)
        }

        /// The four pairs of buckets as shared-device entries of a stratified comparison.
        func shared(first: String, second: String) -> [SharedDeviceMoments] {
            [(ComparisonArm.variant, ComparisonArm.variant, richRich), (.variant, .control, richPlain),
             (.control, .variant, plainRich), (.control, .control, plainPlain)].map { firstArm, secondArm, moments in
                SharedDeviceMoments(first: BucketReference(stratum: first, arm: firstArm),
                                    second: BucketReference(stratum: second, arm: secondArm), moments: moments)
            }
        }
    }

    public var appID: String
    /// The first category's name sorts before the second's.
    public var first: String
    public var second: String
    public var cross: [EngagementMetric: Cross]

    public init(appID: String, first: String, second: String, cross: [EngagementMetric: Cross] = [:]) {
        self.appID = appID
        self.first = first
        self.second = second
        self.cross = cross
    }

    /// The cross moments of devices given by their counts in the first and the second category
    /// (the reference a read model must equal).
    public init(appID: String, first: String, second: String,
                devices: some Sequence<(first: DeviceCategoryCounts, second: DeviceCategoryCounts)>) {
        self.init(appID: appID, first: first, second: second)
        for device in devices {
            for metric in EngagementMetric.reported {
                let firstRich = device.first.proportion(metric, .rich), firstPlain = device.first.proportion(metric, .plain)
                let secondRich = device.second.proportion(metric, .rich), secondPlain = device.second.proportion(metric, .plain)
                var sums = cross[metric] ?? Cross()
                sums.richRich.add(first: firstRich, second: secondRich)
                sums.richPlain.add(first: firstRich, second: secondPlain)
                sums.plainRich.add(first: firstPlain, second: secondRich)
                sums.plainPlain.add(first: firstPlain, second: secondPlain)
                cross[metric] = sums
            }
        }
    }

    /// The pairs of every two categories of each app, from each device's counts per category
    /// (keyed by app, device and category): what the read model's pair sums must hold.
    public static func pairs(of devices: [DeviceMomentFold.Key: DeviceCategoryCounts]) -> [CategoryPairDeviceMoments] {
        // Keyed by [app, device], then by [app, first category, second category].
        var pairs: [[String]: [(first: DeviceCategoryCounts, second: DeviceCategoryCounts)]] = [:]
        for (_, categories) in Dictionary(grouping: devices, by: { [$0.key.appID, $0.key.deviceID] }) {
            let sorted = categories.sorted { $0.key.category < $1.key.category }
            for (i, a) in sorted.enumerated() {
                for b in sorted[(i + 1)...] {
                    pairs[[a.key.appID, a.key.category, b.key.category], default: []].append((a.value, b.value))
                }
            }
        }
        return pairs.keys.sorted { $0.lexicographicallyPrecedes($1) }.map { key in
            CategoryPairDeviceMoments(appID: key[0], first: key[1], second: key[2], devices: pairs[key]!)
        }
    }

    /// One pair's moments over several apps (their devices are distinct clusters).
    static func merged(_ parts: [CategoryPairDeviceMoments]) -> CategoryPairDeviceMoments? {
        guard let head = parts.first else { return nil }
        var merged = CategoryPairDeviceMoments(appID: head.appID, first: head.first, second: head.second)
        for part in parts {
            if part.appID != head.appID { merged.appID += "," + part.appID }
            for metric in EngagementMetric.reported {
                merged.cross[metric] = (merged.cross[metric] ?? Cross()) + (part.cross[metric] ?? Cross())
            }
        }
        return merged
    }
}
