/// Replays the logged deliveries of one app through the pipeline model, under the strategy that
/// actually ran (how well the model reproduces what devices recorded) and under another strategy
/// (what it would have done), and predicts that strategy's engagement.
///
/// Feed it the app's events grouped by device and in time order within a device (`device_id,
/// occurred_at`), then call `finish`. Per device it keeps:
/// - the recorded deliveries so far, from which `NetworkProfile.estimate` gives the network a
///   push meets: only deliveries that occurred BEFORE the one being replayed, never later ones;
/// - two media caches (see `ReplayMediaCache`): what the device really received (for the
///   strategy that ran) and what it would have received under the replayed strategy (for that
///   strategy's own cache hits).
///
/// A delivery is replayed once both its `sent` (the variants offered) and its `delivered` are
/// seen. When a device's clock puts `delivered` before `sent`, the network estimate and caches
/// are taken when `delivered` is seen and used once `sent` arrives. Engagement (`displayed`,
/// `expanded`, actions) is gathered per notification and counted when the device's events end.
///
/// Everything it predicts is a model-based estimate.
public struct StrategyReplay: Sendable {
    public let strategy: any AttachmentStrategyModel
    public let settings: StrategyReplaySettings
    private let catalog: StrategyCatalog
    /// The schema's six strategies, in `AttachmentStrategy.allCases` order, for propensities.
    private let schemaModels: [(AttachmentStrategy, any AttachmentStrategyModel)]
    private var device: DeviceReplay?
    private var totals: ReplayTotals

    /// `catalog` provides the models of the strategies that ran.
    public init(strategy: any AttachmentStrategyModel, settings: StrategyReplaySettings = StrategyReplaySettings(),
                catalog: StrategyCatalog = .standard) {
        self.strategy = strategy
        self.settings = settings
        self.catalog = catalog
        schemaModels = AttachmentStrategy.allCases.compactMap { name in catalog[name].map { (name, $0) } }
        totals = ReplayTotals(maximumHandoffMS: settings.limits.timeBudgetMS)
    }

    /// Takes the next event (see the ordering above).
    public mutating func feed(_ event: Event) {
        totals.counts.events += 1
        if device?.id != event.deviceID {
            finishDevice()
            device = DeviceReplay(id: event.deviceID, historyLimit: settings.historyLimit)
            totals.counts.devices += 1
        }
        var pending = device!.notifications.removeValue(forKey: event.notificationID)
            ?? PendingNotification(category: event.category, firstSeenAt: event.occurredAt)
        if pending.tag == nil { pending.tag = event.experiment }
        switch event.details {
        case .sent(let sent):
            guard pending.sent == nil else { break }
            pending.sent = (sent, event.occurredAt)
            if let delivered = pending.delivered {
                replay(&pending, sent: sent, sentAt: event.occurredAt, delivered: delivered.details, at: delivered.at,
                       snapshot: pending.snapshot)
                pending.snapshot = nil
            }
        case .delivered(let delivered):
            guard pending.delivered == nil else { break }
            pending.delivered = (delivered, event.occurredAt)
            if let sent = pending.sent {
                replay(&pending, sent: sent.details, sentAt: sent.at, delivered: delivered, at: event.occurredAt,
                       snapshot: nil)
            } else {
                pending.snapshot = device!.snapshot(network: delivered.network ?? .unknown)
            }
            device!.network.record(delivered)
        case .displayed(let displayed):
            if pending.presentation == nil { pending.presentation = displayed.presentation }
        case .expanded:
            pending.engagement.insert(.expanded)
        case .action(let action):
            pending.engagement.formUnion(FunnelStageSet(action))
        }
        device!.notifications[event.notificationID] = pending
    }

    /// Counts what is left and computes the estimates.
    /// The experiments whose tagged notifications were counted, in id order.
    public var experimentIDs: [String] { totals.experiments.keys.sorted() }

    /// Completes an experiment's arms from its definition (`PropensityTally.addDesignArm`), before
    /// `finish`; an experiment not counted is left alone.
    public mutating func addDesign(of definition: ExperimentDefinition) {
        guard totals.experiments[definition.id] != nil else { return }
        for arm in definition.arms {
            totals.experiments[definition.id]!.addDesignArm(name: arm.name, probability: arm.weight, strategy: arm.strategy)
        }
    }

    public mutating func finish() -> StrategyReplayResult {
        finishDevice()
        return StrategyReplayResult(strategy: strategy.name, settings: settings, totals: totals)
    }

    // MARK: Replaying one delivery

    private mutating func replay(_ pending: inout PendingNotification, sent: SentDetails, sentAt: Timestamp,
                                 delivered: DeliveredDetails, at time: Timestamp, snapshot: DeviceSnapshot?) {
        let limits = settings.limits
        let ttl = limits.cacheTTLSeconds
        let media = sent.media
        let network = delivered.network ?? .unknown
        let profile: NetworkProfile
        if let snapshot {
            profile = snapshot.profile
        } else if media.isEmpty {
            // Without media no strategy downloads anything: the estimate would not be read.
            profile = NetworkProfile.typical(for: network)
        } else {
            profile = device!.network.estimate(network: network)
        }
        let loggedCache = snapshot?.loggedCache ?? device!.loggedCache
        let replayedCache = snapshot?.replayedCache ?? device!.replayedCache

        var input = PipelineInput(media: media, network: profile,
                                  cache: loggedCache.state(for: media, at: time, ttlSeconds: ttl))
        let ran = delivered.strategy ?? sent.strategy
        let ranModel = ran.flatMap { catalog[$0] }
        let ranOutcome = ranModel.map { PipelineModel.run(input, strategy: $0, limits: limits) }
        // The replayed strategy's choice on the device as it really was, for propensities.
        let choiceOnLoggedCache = strategy.choose(input, limits: limits)
        var mask = StrategyMask()
        if pending.tag != nil {
            for (name, model) in schemaModels where model.choose(input, limits: limits) == choiceOnLoggedCache {
                mask.insert(name)
            }
        }
        input.cache = replayedCache.state(for: media, at: time, ttlSeconds: ttl)
        let outcome = PipelineModel.run(input, strategy: strategy, limits: limits)

        let counted = settings.counts(category: pending.category, at: sentAt)
        if counted {
            var cacheReadUnexplained = false
            if delivered.attachment.source == .cache {
                cacheReadUnexplained = !(Self.variant(of: delivered, in: media).map {
                    loggedCache.holds($0, at: time, ttlSeconds: ttl)
                } ?? false)
            }
            totals.record(category: pending.category, delivered: delivered, ran: ran, ranKnown: ranModel != nil,
                          ranOutcome: ranOutcome, outcome: outcome, cacheReadUnexplained: cacheReadUnexplained)
            if let tag = pending.tag {
                totals.experiments[tag.id, default: PropensityTally(experimentID: tag.id)]
                    .noteDelivery(arm: tag.arm, probability: tag.probability, strategy: ran)
            }
        }
        pending.replayed = ReplayedDelivery(counted: counted, mask: mask)

        // What each cache holds from now on.
        if delivered.outcome == .attached, delivered.attachment.source == .network,
           let variant = Self.variant(of: delivered, in: media) {
            device!.loggedCache.receive(variant, at: time, ttlSeconds: ttl)
        }
        if outcome.outcome == .attached, outcome.source == .network, let variant = outcome.variant(in: input) {
            device!.replayedCache.receive(variant, at: time, ttlSeconds: ttl)
        }
    }

    /// The offered variant a delivery attempted: by name, else by format and size.
    static func variant(of delivered: DeliveredDetails, in media: [MediaVariant]) -> MediaVariant? {
        let attachment = delivered.attachment
        if let name = attachment.variant, let byName = media.first(where: { $0.variant == name }) { return byName }
        guard let format = attachment.format, let bytes = attachment.bytes else { return nil }
        return media.first { $0.format == format && $0.bytes == bytes }
    }

    // MARK: Counting a device's notifications

    private mutating func finishDevice() {
        guard let device else { return }
        for pending in device.notifications.values {
            let time = pending.sent?.at ?? pending.firstSeenAt
            guard settings.counts(category: pending.category, at: time) else { continue }
            totals.count(pending)
        }
        totals.endDevice()
        self.device = nil
    }
}

/// One device's state while its events are fed.
struct DeviceReplay: Sendable {
    let id: String
    var network: ReplayNetworkHistory
    var loggedCache = ReplayMediaCache()
    var replayedCache = ReplayMediaCache()
    /// Notifications seen so far, by notification id.
    var notifications: [String: PendingNotification] = [:]

    init(id: String, historyLimit: Int) {
        self.id = id
        network = ReplayNetworkHistory(limit: historyLimit)
    }

    mutating func snapshot(network type: NetworkType) -> DeviceSnapshot {
        DeviceSnapshot(profile: network.estimate(network: type), loggedCache: loggedCache, replayedCache: replayedCache)
    }
}

/// A device as a delivery met it, kept until the delivery's `sent` arrives.
struct DeviceSnapshot: Sendable {
    var profile: NetworkProfile
    var loggedCache: ReplayMediaCache
    var replayedCache: ReplayMediaCache
}

/// What the events of one notification said so far.
struct PendingNotification: Sendable {
    var category: String
    var firstSeenAt: Timestamp
    var tag: ExperimentTag?
    var sent: (details: SentDetails, at: Timestamp)?
    var delivered: (details: DeliveredDetails, at: Timestamp)?
    var snapshot: DeviceSnapshot?
    var replayed: ReplayedDelivery?
    var presentation: Presentation?
    /// The stages its events after display reached (expanded, actioned, ...).
    var engagement = FunnelStageSet()
}

/// What the replay of a notification's delivery leaves for counting its engagement.
struct ReplayedDelivery: Sendable {
    var counted: Bool
    /// The schema strategies whose choice equals the replayed strategy's (propensities).
    var mask: StrategyMask
}
