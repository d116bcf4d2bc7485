import Foundation

/// Generates the events of a scenario, deterministically for a seed: no clock, no I/O, no
/// system randomness. Notification `n` (1-based) is `sim-<seed>-<n>`; its content depends only
/// on the scenario, the seed and `n`, and its events' ids only on the seed, `n` and their place.
///
/// Per notification, in time order:
/// 1. `sent` at a time spread evenly over the span (stratified), with the offered variants and
///    the strategy (the experiment arm's, else the scenario's);
/// 2. `delivered` after the push's transit (0.2 s plus an exponential of mean 0.8 s, at most 10 s)
///    and the extension's handoff time, with the outcome `PipelineModel` gives: the strategy
///    chooses with the device's usual network profile, the download runs on the push's jittered
///    one (unusable with `downloadFailureProbability`);
/// 3. `displayed` 20 to 300 ms later, rich when the media was attached;
/// 4. engagement drawn from the presentation's true rates (see `EngagementRates`), moved by the
///    device's propensity (see `DevicePropensity`): `expanded`
///    2 s to 15 min after display; then maybe an action 1 s to 2 min later, the category's
///    `action_id` or a reply (`reply` with a `text_input_length` of 1 to 140); finally maybe an
///    open or a dismiss 1 s to 15 min after the last of these.
///
/// Emission order and repeats are options (`SimulationOptions`); they never change the events
/// themselves or the realized counts.
public struct TrafficSimulator: Sendable {
    public let scenario: SimulationScenario
    public let seed: UInt64
    public let start: Timestamp
    public let options: SimulationOptions
    /// The devices, `device-1` first.
    public let devices: [SimulatedDevice]
    /// The configured truth and the counts realized by the notifications generated so far.
    public private(set) var groundTruth: SimulationGroundTruth

    /// The next notification to generate, 1-based.
    private var nextNotification = 1
    /// Events of generated notifications not yet emitted, from `queueHead` on.
    private var queue: [Event] = []
    private var queueHead = 0
    /// Second copies waiting until `emitted` reaches their `due`.
    private var resends: [(due: Int, event: Event)] = []
    /// Draws for emission order and duplicates, apart from the content's streams.
    private var emission: SimulationRandom
    private let strategies: [AttachmentStrategy: any AttachmentStrategyModel]

    /// A simulator for `scenario`, whose events start at `start`.
    public init(scenario: SimulationScenario, seed: UInt64, start: Timestamp,
                options: SimulationOptions = SimulationOptions()) throws(SimulationError) {
        if let problem = scenario.problem { throw SimulationError(code: .invalidScenario, detail: problem) }
        if let problem = options.problem { throw SimulationError(code: .invalidOptions, detail: problem) }
        self.scenario = scenario
        self.seed = seed
        self.start = start
        self.options = options
        emission = SimulationRandom(seed: seed, stream: Stream.emission, index: 0)
        var models: [AttachmentStrategy: any AttachmentStrategyModel] = [:]
        for strategy in AttachmentStrategy.allCases { models[strategy] = StrategyCatalog.standard[strategy] }
        strategies = models
        let ranges = scenario.experiment?.ranges ?? []

        var truth = SimulationGroundTruth(seed: seed, categories: scenario.categories, propensity: scenario.propensity)
        if let experiment = scenario.experiment {
            for arm in experiment.arms { truth.arms[arm.name] = ArmTally(strategy: arm.strategy, weight: arm.weight) }
        }
        var devices: [SimulatedDevice] = []
        devices.reserveCapacity(scenario.deviceCount)
        let mix = scenario.networks
        let weights = mix.entries.map(\.weight)
        for index in 0..<scenario.deviceCount {
            var random = SimulationRandom(seed: seed, stream: Stream.device, index: UInt64(index))
            let entry = mix.entries[random.weighted(weights)]
            let factor = exp(mix.deviceSpread * random.normal())
            let id = TrafficSimulator.deviceID(index + 1)
            let arm = scenario.experiment.flatMap { $0.arm(forDevice: id, ranges: ranges) }
            if let arm { truth.arms[arm.name]?.devices += 1 } else { truth.unassignedDevices += 1 }
            var propensity = 0.0
            if scenario.propensity.spread > 0 {
                // Its own stream, so that the devices' other draws stay what they were without it.
                var draw = SimulationRandom(seed: options.propensitySeed ?? seed, stream: Stream.propensity,
                                            index: UInt64(index))
                propensity = scenario.propensity.shift(z: draw.normal())
            }
            devices.append(SimulatedDevice(
                id: id, network: entry.network,
                profile: NetworkProfile(throughputBytesPerSecond: entry.profile.throughputBytesPerSecond * factor,
                                        latencyMS: entry.profile.latencyMS / factor),
                arm: arm, propensity: propensity))
        }
        self.devices = devices
        groundTruth = truth
    }

    /// `start + scenario.spanSeconds`: no event occurs later.
    public var end: Timestamp {
        start.adding(microseconds: scenario.spanSeconds * Timestamp.microsecondsPerSecond)
    }

    /// True when every event, duplicates included, has been emitted.
    public var isFinished: Bool {
        nextNotification > scenario.notificationCount && queueHead == queue.count && resends.isEmpty
    }

    /// `device-<n>`, n from 1.
    public static func deviceID(_ n: Int) -> String { "device-\(n)" }

    /// `sim-<seed>-<n>`, n from 1.
    public static func notificationID(seed: UInt64, _ n: Int) -> String { "sim-\(seed)-\(n)" }

    /// Up to `batchSize` further events in emission order; nil once all were emitted.
    public mutating func next(batchSize: Int) -> [Event]? {
        precondition(batchSize > 0, "batch size must be positive")
        var batch: [Event] = []
        batch.reserveCapacity(min(batchSize, 4_096))
        while batch.count < batchSize {
            if let due = dueResend(force: false) {
                emit(resends.remove(at: due).event, into: &batch, isCopy: true)
            } else if queueHead < queue.count {
                let event = queue[queueHead]
                queueHead += 1
                emit(event, into: &batch, isCopy: false)
            } else if nextNotification <= scenario.notificationCount {
                enqueue(generate(nextNotification))
                nextNotification += 1
            } else if let due = dueResend(force: true) {
                emit(resends.remove(at: due).event, into: &batch, isCopy: true)
            } else {
                break
            }
        }
        return batch.isEmpty ? nil : batch
    }

    /// The remaining events, in batches of `size`, from a copy of this simulator (which itself does
    /// not advance): read the copy's `groundTruth` from the returned sequence.
    public func batches(size: Int) -> SimulationBatches {
        precondition(size > 0, "batch size must be positive")
        return SimulationBatches(simulator: self, size: size)
    }

    /// Every remaining event, in emission order.
    public mutating func remainingEvents() -> [Event] {
        var all: [Event] = []
        while let batch = next(batchSize: 4_096) { all.append(contentsOf: batch) }
        return all
    }

    // MARK: Emission

    private mutating func emit(_ event: Event, into batch: inout [Event], isCopy: Bool) {
        batch.append(event)
        groundTruth.emitted += 1
        if isCopy {
            groundTruth.duplicatesEmitted += 1
        } else if options.duplicateFraction > 0, emission.chance(options.duplicateFraction) {
            let delay = emission.integer(in: 0...options.maximumDuplicateDelay)
            resends.append((due: groundTruth.emitted + delay, event: event))
        }
    }

    /// The index of the resend due first, if it is due (or `force`).
    private func dueResend(force: Bool) -> Int? {
        guard let first = resends.indices.min(by: { resends[$0].due < resends[$1].due }) else { return nil }
        return force || resends[first].due <= groundTruth.emitted ? first : nil
    }

    private mutating func enqueue(_ events: [Event]) {
        var events = events
        if options.outOfOrderFraction > 0, events.count > 1, emission.chance(options.outOfOrderFraction) {
            emission.shuffle(&events)
            if TrafficSimulator.isInTimeOrder(events) { events.swapAt(0, 1) }
            groundTruth.shuffledNotifications += 1
        }
        if queueHead == queue.count {
            queue.removeAll(keepingCapacity: true)
            queueHead = 0
        }
        queue.append(contentsOf: events)
    }

    static func isInTimeOrder(_ events: [Event]) -> Bool {
        zip(events, events.dropFirst()).allSatisfy { $0.occurredAt <= $1.occurredAt }
    }

    // MARK: Generation

    /// Independent random streams.
    enum Stream {
        static let notification: UInt64 = 1
        static let device: UInt64 = 2
        static let eventID: UInt64 = 3
        static let emission: UInt64 = 4
        static let propensity: UInt64 = 5
    }

    /// The events of notification `n` in time order; records them in the ground truth.
    mutating func generate(_ n: Int) -> [Event] {
        var random = SimulationRandom(seed: seed, stream: Stream.notification, index: UInt64(n))
        let device = devices[random.below(devices.count)]
        let category = scenario.categories[random.weighted(scenario.categories.map(\.weight))]
        let arm = device.arm
        let strategy = arm?.strategy ?? scenario.strategy
        let tag = arm.map { ExperimentTag(id: scenario.experiment!.id, arm: $0.name, probability: $0.weight) }

        // Sent times are stratified: notification n is sent in the n-th slice of the send window.
        let window = Double((scenario.spanSeconds - SimulationScenario.maximumTailSeconds) * Timestamp.microsecondsPerSecond)
        let slice = window / Double(max(scenario.notificationCount, 1))
        let sentAt = start.adding(microseconds: Int64(slice * (Double(n - 1) + random.unit())))

        var media: [MediaVariant] = []
        if let offer = category.media, random.chance(category.mediaProbability) { media = self.offer(of: offer, &random) }
        let payloadBytes = 250 + 90 * media.count + random.below(200)

        let jitter = exp(scenario.networks.jitter * random.normal())
        var network = NetworkProfile(throughputBytesPerSecond: device.profile.throughputBytesPerSecond * jitter,
                                     latencyMS: device.profile.latencyMS / jitter)
        if random.chance(scenario.downloadFailureProbability) {
            network = NetworkProfile(throughputBytesPerSecond: 0, latencyMS: network.latencyMS)
        }
        var cache = CacheState.empty
        if !media.isEmpty, random.chance(scenario.prefetchProbability) {
            cache = CacheState(variants: VariantSet(media.indices),
                               ageSeconds: random.integer(in: 0...scenario.prefetchMaxAgeSeconds))
        }
        let limits = scenario.limits
        let usual = PipelineInput(media: media, network: device.profile, cache: cache)
        let actual = PipelineInput(media: media, network: network, cache: cache)
        let choice = strategies[strategy]!.choose(usual, limits: limits)
        let outcome = PipelineModel.run(actual, choice: choice, limits: limits)
        let delivered = outcome.deliveredDetails(for: actual, network: device.network, strategy: strategy)
        let presentation = outcome.presentation
        let shownKind = presentation == .rich ? (outcome.variant(in: actual)?.kind ?? .noAttachment) : .noAttachment

        let transitMS = 200 + min(random.exponential(mean: 800), 9_800)
        let deliveredAt = sentAt.adding(microseconds: Int64((transitMS + Double(outcome.handoffMS)) * 1_000))
        let displayedAt = deliveredAt.adding(microseconds: Int64(random.uniform(20, 300) * 1_000))

        var details: [(Timestamp, EventDetails)] = [
            (sentAt, .sent(SentDetails(media: media, strategy: strategy, payloadBytes: payloadBytes))),
            (deliveredAt, .delivered(delivered)),
            (displayedAt, .displayed(DisplayedDetails(presentation: presentation, attachmentKind: shownKind))),
        ]

        // Engagement, nested as EngagementRates describes, at the device's own rates.
        let rates = DevicePropensity.rates(category.rates(for: presentation), shift: device.propensity)
        var tally = EngagementTally()
        tally[.displayed] = 1
        var last = displayedAt
        if random.chance(rates.expanded) {
            last = later(last, seconds: 2 + min(random.exponential(mean: 60), 898), &random)
            details.append((last, .expanded))
            tally[.expanded] = 1
            if rates.expanded > 0, random.chance(rates.actioned / rates.expanded) {
                tally[.actioned] = 1
                let action: ActionDetails
                if rates.actioned > 0, random.chance(rates.replied / rates.actioned) {
                    // Typing takes longer than tapping a button.
                    last = later(last, seconds: 3 + min(random.exponential(mean: 20), 117), &random)
                    action = ActionDetails(actionID: "reply", textInputLength: random.integer(in: 1...140))
                    tally[.replied] = 1
                } else {
                    last = later(last, seconds: 1 + min(random.exponential(mean: 8), 119), &random)
                    action = ActionDetails(actionID: category.actionID)
                }
                tally.actions[action.actionID] = 1
                details.append((last, .action(action)))
            }
        }
        let resolution = random.unit()
        if resolution < rates.opened + rates.dismissed {
            let opened = resolution < rates.opened
            last = later(last, seconds: 1 + min(random.exponential(mean: 45), 899), &random)
            let id = opened ? ActionDetails.openIdentifier : ActionDetails.dismissIdentifier
            details.append((last, .action(ActionDetails(actionID: id))))
            tally[opened ? .opened : .dismissed] = 1
        }

        // Ids and the common fields.
        let notificationID = TrafficSimulator.notificationID(seed: seed, n)
        let end = self.end
        var events: [Event] = []
        events.reserveCapacity(details.count)
        for (k, (at, detail)) in details.enumerated() {
            events.append(Event(eventID: eventID(notification: n, event: k), notificationID: notificationID,
                                deviceID: device.id, category: category.name, occurredAt: min(at, end),
                                experiment: tag, details: detail))
        }

        groundTruth.notifications += 1
        groundTruth.events += events.count
        groundTruth.realized[SimulationCell(category: category.name, presentation: presentation), default: EngagementTally()] =
            groundTruth.realized(category: category.name, presentation: presentation) + tally
        groundTruth.outcomesByNetwork[device.network, default: OutcomeTally()].record(outcome.outcome)
        groundTruth.outcomesByCategory[category.name, default: OutcomeTally()].record(outcome.outcome)
        if let arm, var arms = groundTruth.arms[arm.name] {
            arms.notifications += 1
            arms.outcomes.record(outcome.outcome)
            arms.engagement = arms.engagement + tally
            groundTruth.arms[arm.name] = arms
        }
        return events
    }

    /// `time` moved on by `seconds` plus a random fraction of a millisecond, so that event times
    /// use the full microsecond precision.
    private func later(_ time: Timestamp, seconds: Double, _ random: inout SimulationRandom) -> Timestamp {
        time.adding(microseconds: Int64(seconds * 1_000_000) + Int64(random.below(1_000)))
    }

    /// The variants one notification offers: the original, then thumbnail and poster when offered.
    private func offer(of offer: MediaOffer, _ random: inout SimulationRandom) -> [MediaVariant] {
        func size(_ range: ClosedRange<Int>) -> Int {
            let bytes = random.logUniform(Double(range.lowerBound), Double(range.upperBound))
            return min(range.upperBound, max(range.lowerBound, Int(bytes.rounded())))
        }
        var duration: Int?
        if let range = offer.durationMS, offer.kind == .video || offer.kind == .audio {
            duration = random.integer(in: range)
        }
        var media = [MediaVariant(variant: "original", kind: offer.kind, format: offer.format,
                                  bytes: size(offer.originalBytes), durationMS: duration)]
        if let range = offer.thumbnailBytes {
            media.append(MediaVariant(variant: "thumbnail", kind: .image, format: .jpeg, bytes: size(range)))
        }
        if let range = offer.posterBytes {
            media.append(MediaVariant(variant: "poster", kind: .image, format: .jpeg, bytes: size(range)))
        }
        return media
    }

    /// A version 4, variant 1 UUID from the seed and the event's place: 122 random bits.
    func eventID(notification n: Int, event k: Int) -> EventID {
        var random = SimulationRandom(seed: seed, stream: Stream.eventID, index: UInt64(n) << 8 | UInt64(k))
        let high = random.next() & ~0xF000 | 0x4000
        let low = random.next() & 0x3FFF_FFFF_FFFF_FFFF | 0x8000_0000_0000_0000
        return EventID(high: high, low: low)
    }
}

/// How the generated events are emitted.
public struct SimulationOptions: Sendable, Equatable {
    /// The share of notifications whose events are emitted in a shuffled order (never their time
    /// order), as when the extension's and the app's batches arrive in either order.
    public var outOfOrderFraction: Double
    /// The share of events emitted a second time, identical (same event id), as a client retrying
    /// a batch would; the copy follows 0 ... `maximumDuplicateDelay` events after the original.
    public var duplicateFraction: Double
    public var maximumDuplicateDelay: Int
    /// The seed the devices' propensities are drawn from; nil for the simulator's own. Another
    /// simulator's seed gives the same people other notifications (other ids): the traffic of the
    /// same devices before an experiment, which CUPED reads as the covariate.
    public var propensitySeed: UInt64?

    public init(outOfOrderFraction: Double = 0, duplicateFraction: Double = 0, maximumDuplicateDelay: Int = 200,
                propensitySeed: UInt64? = nil) {
        self.outOfOrderFraction = outOfOrderFraction
        self.duplicateFraction = duplicateFraction
        self.maximumDuplicateDelay = maximumDuplicateDelay
        self.propensitySeed = propensitySeed
    }

    var problem: String? {
        if !(0...1).contains(outOfOrderFraction) { return "out-of-order fraction must lie in [0, 1]" }
        if !(0...1).contains(duplicateFraction) { return "duplicate fraction must lie in [0, 1]" }
        if maximumDuplicateDelay < 0 { return "duplicate delay must not be negative" }
        return nil
    }
}

/// One simulated device: its network for the whole run, its usual speed there, its arm and how
/// readily its owner engages.
public struct SimulatedDevice: Sendable, Equatable {
    public var id: String
    public var network: NetworkType
    public var profile: NetworkProfile
    /// Nil outside the experiment or without one.
    public var arm: ExperimentArm?
    /// The device's log-odds shift of every engagement rate (`DevicePropensity`); 0 without one.
    public var propensity: Double = 0
}

/// The remaining events of a simulator copy, in batches.
public struct SimulationBatches: Sequence, IteratorProtocol, Sendable {
    public private(set) var simulator: TrafficSimulator
    public let size: Int

    init(simulator: TrafficSimulator, size: Int) {
        self.simulator = simulator
        self.size = size
    }

    public mutating func next() -> [Event]? {
        simulator.next(batchSize: size)
    }

    /// The truth of the events this sequence produced so far.
    public var groundTruth: SimulationGroundTruth { simulator.groundTruth }
}

/// A scenario or options the simulator cannot run.
public struct SimulationError: Error, Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible {
    public enum Code: String, Sendable {
        case invalidScenario = "invalid_scenario"
        case invalidOptions = "invalid_options"
    }

    public var code: Code
    public var detail: String

    public var description: String { "\(code.rawValue): \(detail)" }
    public var debugDescription: String { "SimulationError(code: \(code.rawValue), detail: \(detail))" }
}
