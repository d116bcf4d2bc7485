/// What a simulated deployment looks like: who receives pushes, of which categories, with which
/// media, over which networks, attached by which strategy, and how people engage with rich and
/// plain notifications. Every rate here is ground truth that a report on the generated events
/// should recover.
public struct SimulationScenario: Sendable, Equatable {
    /// Devices `device-1` ... `device-<deviceCount>`; each notification goes to one of them at random.
    public var deviceCount: Int
    /// Notifications generated in all.
    public var notificationCount: Int
    /// Every event occurs within `[start, start + spanSeconds]`: pushes are sent during the first
    /// `spanSeconds - SimulationScenario.maximumTailSeconds`, and all that follows a push happens
    /// within that tail.
    public var spanSeconds: Int64
    public var categories: [SimulatedCategory]
    /// Which networks devices are on and how fast they are.
    public var networks: NetworkMix
    /// The chance that a push finds the network unusable although the device is on one (captive
    /// portal, radio handover): the extension's download fails (`download_failed`).
    public var downloadFailureProbability: Double
    /// The chance that the app prefetched a push's media before it arrived, so the offered
    /// variants are cached, with an age uniform in 0 ... `prefetchMaxAgeSeconds`.
    public var prefetchProbability: Double
    public var prefetchMaxAgeSeconds: Int
    /// The system's limits, applied by `PipelineModel` to decide each delivery.
    public var limits: PipelineLimits
    /// The strategy of notifications outside an experiment.
    public var strategy: AttachmentStrategy
    public var experiment: SimulatedExperiment?
    /// How much devices differ in engagement, persistently (`DevicePropensity`); none by default.
    public var propensity: DevicePropensity

    public init(deviceCount: Int, notificationCount: Int, spanSeconds: Int64, categories: [SimulatedCategory],
                networks: NetworkMix = .standard, downloadFailureProbability: Double = 0.01,
                prefetchProbability: Double = 0, prefetchMaxAgeSeconds: Int = 3_600,
                limits: PipelineLimits = PipelineLimits(), strategy: AttachmentStrategy = .full,
                experiment: SimulatedExperiment? = nil, propensity: DevicePropensity = .none) {
        self.deviceCount = deviceCount
        self.notificationCount = notificationCount
        self.spanSeconds = spanSeconds
        self.categories = categories
        self.networks = networks
        self.downloadFailureProbability = downloadFailureProbability
        self.prefetchProbability = prefetchProbability
        self.prefetchMaxAgeSeconds = prefetchMaxAgeSeconds
        self.limits = limits
        self.strategy = strategy
        self.experiment = experiment
        self.propensity = propensity
    }

    /// The longest time from a push being sent to its last event: delivery, the extension's time
    /// budget, display, and the latest expansion, action and open or dismiss (one hour).
    public static let maximumTailSeconds: Int64 = 3_600

    /// What is wrong with the scenario, or nil when the simulator can run it.
    public var problem: String? {
        if deviceCount < 1 { return "there must be at least one device" }
        if notificationCount < 0 { return "the notification count must not be negative" }
        if spanSeconds <= SimulationScenario.maximumTailSeconds {
            return "the span must be longer than \(SimulationScenario.maximumTailSeconds) seconds"
        }
        if categories.isEmpty { return "there must be at least one category" }
        if !categories.contains(where: { $0.weight > 0 }) { return "some category must have a positive weight" }
        var names = Set<String>()
        for category in categories {
            if !names.insert(category.name).inserted { return "category \(category.name) appears twice" }
            if let problem = category.problem { return "category \(category.name): \(problem)" }
        }
        if let problem = networks.problem { return problem }
        if !(0...1).contains(downloadFailureProbability) { return "download failure probability must lie in [0, 1]" }
        if !(0...1).contains(prefetchProbability) { return "prefetch probability must lie in [0, 1]" }
        if prefetchMaxAgeSeconds < 0 { return "prefetch age must not be negative" }
        if let experiment, let problem = experiment.problem { return "experiment \(experiment.id): \(problem)" }
        if let problem = propensity.problem { return problem }
        return nil
    }
}

// MARK: - Categories

/// One kind of notification and how people engage with it.
public struct SimulatedCategory: Sendable, Equatable {
    /// The `category` of the events, e.g. `new_photo`.
    public var name: String
    /// Relative share of notifications.
    public var weight: Double
    /// Rates of plain notifications.
    public var plain: EngagementRates
    /// Rich rates are `plain.applying(richLift)`.
    public var richLift: EngagementLift
    /// The `action_id` of the category's app-defined action other than replying, e.g. `like`.
    public var actionID: String
    /// The media the category's notifications offer; nil for a text-only category.
    public var media: MediaOffer?
    /// The share of the category's notifications that offer `media`; the others are text only and
    /// always plain (`not_requested`).
    public var mediaProbability: Double

    public init(name: String, weight: Double, plain: EngagementRates, richLift: EngagementLift = .none,
                actionID: String, media: MediaOffer?, mediaProbability: Double = 1) {
        self.name = name
        self.weight = weight
        self.plain = plain
        self.richLift = richLift
        self.actionID = actionID
        self.media = media
        self.mediaProbability = mediaProbability
    }

    /// The true rates of a notification displayed with `presentation`.
    public func rates(for presentation: Presentation) -> EngagementRates {
        presentation == .rich ? plain.applying(richLift) : plain
    }

    var problem: String? {
        if name.isEmpty || name.utf8.count > 100 { return "the name must be 1 to 100 bytes long" }
        if !(weight >= 0 && weight.isFinite) { return "the weight must be finite and not negative" }
        if actionID.isEmpty || actionID.unicodeScalars.count > 64 { return "the action id must be 1 to 64 characters long" }
        if actionID == "reply" || actionID == ActionDetails.openIdentifier || actionID == ActionDetails.dismissIdentifier {
            return "the action id must be an app-defined action other than reply"
        }
        if let problem = plain.problem { return "plain: \(problem)" }
        if let problem = rates(for: .rich).problem { return "rich: \(problem)" }
        if let media, let problem = media.problem { return "media: \(problem)" }
        if !(0...1).contains(mediaProbability) { return "the media probability must lie in [0, 1]" }
        return nil
    }
}

/// The media a notification offers: an original, optionally a thumbnail (a JPEG image) and, for
/// video, a poster frame (a JPEG image). Sizes are drawn log-uniformly from each range, so an
/// original range reaching past the system's size cap yields some `too_large` deliveries.
public struct MediaOffer: Sendable, Equatable {
    public var kind: AttachmentKind
    public var format: MediaFormat
    public var originalBytes: ClosedRange<Int>
    public var thumbnailBytes: ClosedRange<Int>?
    public var posterBytes: ClosedRange<Int>?
    /// For video and audio: the duration range in milliseconds.
    public var durationMS: ClosedRange<Int>?

    public init(kind: AttachmentKind, format: MediaFormat, originalBytes: ClosedRange<Int>,
                thumbnailBytes: ClosedRange<Int>? = nil, posterBytes: ClosedRange<Int>? = nil,
                durationMS: ClosedRange<Int>? = nil) {
        self.kind = kind
        self.format = format
        self.originalBytes = originalBytes
        self.thumbnailBytes = thumbnailBytes
        self.posterBytes = posterBytes
        self.durationMS = durationMS
    }

    var problem: String? {
        if kind == .noAttachment { return "the kind must be an attachable kind" }
        for range in [originalBytes, thumbnailBytes, posterBytes].compactMap({ $0 }) where range.lowerBound < 1 {
            return "sizes must be at least 1 byte"
        }
        if let durationMS, durationMS.lowerBound < 0 { return "durations must not be negative" }
        return nil
    }
}

// MARK: - Networks

/// The networks devices are on. Each device is given one entry (by weight) for the whole run and
/// a speed of its own: the entry's profile with throughput and latency scaled by
/// `exp(deviceSpread * z)` for a standard normal `z` per device (a faster device also connects
/// faster). Each push then sees that speed scaled again by `exp(jitter * z)`.
public struct NetworkMix: Sendable, Equatable {
    public var entries: [NetworkShare]
    /// Spread between devices, on the log scale.
    public var deviceSpread: Double
    /// Spread between pushes to one device, on the log scale.
    public var jitter: Double

    public init(_ entries: [NetworkShare], deviceSpread: Double = 0.5, jitter: Double = 0.3) {
        self.entries = entries
        self.deviceSpread = deviceSpread
        self.jitter = jitter
    }

    /// Wi-Fi 60 %, cellular 32 %, poor cellular (150 kB/s, 400 ms) 8 %, typical profiles otherwise;
    /// device spread 0.5, jitter 0.3.
    public static let standard = NetworkMix([
        NetworkShare(.wifi, weight: 0.60),
        NetworkShare(.cellular, weight: 0.32),
        NetworkShare(.cellular, weight: 0.08,
                     profile: NetworkProfile(throughputBytesPerSecond: 150_000, latencyMS: 400)),
    ])

    /// Every device on one network of the given profile, without spread or jitter.
    public static func uniform(_ network: NetworkType, profile: NetworkProfile) -> NetworkMix {
        NetworkMix([NetworkShare(network, weight: 1, profile: profile)], deviceSpread: 0, jitter: 0)
    }

    var problem: String? {
        if entries.isEmpty || !entries.contains(where: { $0.weight > 0 }) {
            return "the network mix needs an entry with a positive weight"
        }
        if entries.contains(where: { !($0.weight >= 0 && $0.weight.isFinite) }) {
            return "network weights must be finite and not negative"
        }
        if !(deviceSpread >= 0 && deviceSpread.isFinite && jitter >= 0 && jitter.isFinite) {
            return "network spread and jitter must be finite and not negative"
        }
        return nil
    }
}

public struct NetworkShare: Sendable, Equatable {
    /// What `delivered` events report as `network`.
    public var network: NetworkType
    public var weight: Double
    public var profile: NetworkProfile

    /// `profile` defaults to `NetworkProfile.typical(for: network)`.
    public init(_ network: NetworkType, weight: Double, profile: NetworkProfile? = nil) {
        self.network = network
        self.weight = weight
        self.profile = profile ?? NetworkProfile.typical(for: network)
    }
}

// MARK: - Experiment

/// An attachment-strategy experiment. Devices are assigned as GrowthBook assigns users: hash
/// version 2 of `seed` and the device id, bucket ranges from the arms' weights and `coverage`.
/// Devices outside coverage get the scenario's strategy and no tag.
public struct SimulatedExperiment: Sendable, Equatable {
    public var id: String
    /// GrowthBook's hash seed, usually the experiment key.
    public var seed: String
    public var arms: [ExperimentArm]
    public var coverage: Double

    public init(id: String, seed: String? = nil, arms: [ExperimentArm], coverage: Double = 1) {
        self.id = id
        self.seed = seed ?? id
        self.arms = arms
        self.coverage = coverage
    }

    /// The bucket ranges of the arms, in arm order.
    public var ranges: [GrowthBookBucketing.BucketRange] {
        GrowthBookBucketing.bucketRanges(weights: arms.map(\.weight), coverage: coverage)
    }

    /// The arm a device is assigned to, nil when it falls outside coverage.
    public func arm(forDevice deviceID: String, ranges: [GrowthBookBucketing.BucketRange]? = nil) -> ExperimentArm? {
        let n = GrowthBookBucketing.hashV2(seed: seed, id: deviceID)
        return GrowthBookBucketing.chooseVariation(n: n, ranges: ranges ?? self.ranges).map { arms[$0] }
    }

    var problem: String? {
        if id.isEmpty || id.utf8.count > 100 { return "the id must be 1 to 100 bytes long" }
        if arms.isEmpty { return "there must be at least one arm" }
        var names = Set<String>()
        for arm in arms {
            if arm.name.isEmpty || arm.name.utf8.count > 100 { return "arm names must be 1 to 100 bytes long" }
            if !names.insert(arm.name).inserted { return "arm \(arm.name) appears twice" }
            // The weight is sent as the tag's probability, which must lie in (0, 1].
            if !(arm.weight > 0 && arm.weight <= 1) { return "arm \(arm.name) must have a weight in (0, 1]" }
        }
        if !(0.99...1.01).contains(arms.reduce(0) { $0 + $1.weight }) { return "arm weights must add up to 1" }
        if !(coverage >= 0 && coverage <= 1) { return "coverage must lie in [0, 1]" }
        return nil
    }
}

public struct ExperimentArm: Sendable, Equatable {
    /// The tag's `arm`, e.g. `control`.
    public var name: String
    public var strategy: AttachmentStrategy
    /// The share of devices; also the tag's `probability`.
    public var weight: Double

    public init(_ name: String, strategy: AttachmentStrategy, weight: Double) {
        self.name = name
        self.strategy = strategy
        self.weight = weight
    }
}

// MARK: - The standard scenario

extension SimulationScenario {
    /// The quick start's traffic: 1,000 devices, 10,000 notifications over one day, four categories
    /// (new photos, chat messages, promotions, breaking news; some text only, so that both
    /// presentations are well populated), the standard network mix, 1 % download failures, and an
    /// experiment `strategy-full-vs-adaptive` splitting devices evenly between `full` (control) and
    /// `adaptive` (treatment).
    public static let standard = SimulationScenario(
        deviceCount: 1_000,
        notificationCount: 10_000,
        spanSeconds: 86_400,
        categories: [
            SimulatedCategory(
                name: "new_photo", weight: 0.40,
                plain: EngagementRates(expanded: 0.10, actioned: 0.04, opened: 0.18, dismissed: 0.25, replied: 0.01),
                richLift: EngagementLift(expanded: 1.6, actioned: 1.3, opened: 1.25, dismissed: 0.9),
                actionID: "like",
                // Up to 12 MB: the few above the 10 MiB image cap come back too_large.
                media: MediaOffer(kind: .image, format: .jpeg, originalBytes: 300_000...12_000_000,
                                  thumbnailBytes: 20_000...80_000),
                mediaProbability: 0.9),
            SimulatedCategory(
                name: "chat_message", weight: 0.30,
                plain: EngagementRates(expanded: 0.30, actioned: 0.20, opened: 0.35, dismissed: 0.15, replied: 0.12),
                richLift: EngagementLift(expanded: 1.2, actioned: 1.05, opened: 1.05, dismissed: 0.95, replied: 1.1),
                actionID: "mark_read",
                media: MediaOffer(kind: .image, format: .jpeg, originalBytes: 50_000...2_000_000,
                                  thumbnailBytes: 10_000...30_000),
                mediaProbability: 0.35),
            SimulatedCategory(
                name: "promo_sale", weight: 0.20,
                plain: EngagementRates(expanded: 0.05, actioned: 0.02, opened: 0.06, dismissed: 0.45),
                richLift: .none,
                actionID: "view_deal",
                media: MediaOffer(kind: .image, format: .png, originalBytes: 100_000...1_500_000,
                                  thumbnailBytes: 15_000...40_000),
                mediaProbability: 0.6),
            SimulatedCategory(
                name: "breaking_news", weight: 0.10,
                plain: EngagementRates(expanded: 0.12, actioned: 0.03, opened: 0.22, dismissed: 0.20),
                richLift: EngagementLift(expanded: 1.4, actioned: 1.1, opened: 1.15, dismissed: 0.95),
                actionID: "read_later",
                // Videos up to 40 MB: slow devices run out of time and fall back to plain.
                media: MediaOffer(kind: .video, format: .mp4, originalBytes: 2_000_000...40_000_000,
                                  thumbnailBytes: 15_000...50_000, posterBytes: 80_000...400_000,
                                  durationMS: 5_000...60_000),
                mediaProbability: 0.7),
        ],
        networks: .standard,
        downloadFailureProbability: 0.01,
        strategy: .full,
        experiment: SimulatedExperiment(
            id: "strategy-full-vs-adaptive",
            arms: [ExperimentArm("control", strategy: .full, weight: 0.5),
                   ExperimentArm("treatment", strategy: .adaptive, weight: 0.5)]))
}
