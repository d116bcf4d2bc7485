/// Everything a strategy replay counts, before the estimates are computed.
struct ReplayTotals: Sendable {
    var counts: ReplayCounts
    /// Per category: rich displays recorded, predicted for the strategy that ran, and predicted
    /// for the replayed strategy.
    var categories: [String: CategoryReplay] = [:]

    var engagement = PresentationEngagement()
    /// Engagement of the counted, replayed and displayed notifications, as recorded.
    var observed = FunnelCounts()
    var experiments: [String: PropensityTally] = [:]
    private var experimentsOfTheDevice: Set<String> = []

    init(maximumHandoffMS: Int) {
        counts = ReplayCounts(maximumHandoffMS: maximumHandoffMS)
    }

    /// One counted delivery's recorded and predicted outcomes.
    mutating func record(category: String, delivered: DeliveredDetails, ran: AttachmentStrategy?, ranKnown: Bool,
                         ranOutcome: PipelineOutcome?, outcome: PipelineOutcome, cacheReadUnexplained: Bool) {
        counts.recorded.record(delivered)
        counts.replayed.record(outcome)
        // One lookup for the three shares.
        categories[category, default: CategoryReplay(name: category)].add(
            recorded: delivered.outcome == .attached, strategyThatRan: ranOutcome.map { $0.presentation == .rich },
            replayed: outcome.presentation == .rich)
        if cacheReadUnexplained { counts.unexplainedCacheReads += 1 }
        guard let ran, let ranOutcome else {
            counts.withoutStrategy += 1
            return
        }
        counts.agreement.record(recorded: delivered, predicted: ranOutcome)
        counts.agreementByStrategy[ran, default: PipelineAgreement.Accumulator()].record(recorded: delivered, predicted: ranOutcome)
        counts.strategyThatRan.record(ranOutcome)
    }

    /// One counted notification, once all its device's events were seen.
    mutating func count(_ notification: PendingNotification) {
        counts.notifications += 1
        if notification.delivered != nil && notification.sent == nil { counts.deliveredWithoutSent += 1 }
        if notification.sent != nil && notification.delivered == nil { counts.sentWithoutDelivery += 1 }
        guard let presentation = notification.presentation else { return }
        let reached = FunnelStageSet(delivered: notification.delivered != nil,
                                     presentation: ObservedPresentation(presentation), engaged: notification.engagement)
        let counts = FunnelCounts(reached: reached.withinDenominators)
        engagement.add(category: notification.category, presentation: presentation, counts: counts,
                       isRandomized: notification.tag != nil)
        guard let replayed = notification.replayed, replayed.counted else { return }
        observed = observed + counts
        if let tag = notification.tag {
            experiments[tag.id, default: PropensityTally(experimentID: tag.id)].add(arm: tag.arm, mask: replayed.mask, counts: counts)
            experimentsOfTheDevice.insert(tag.id)
        }
    }

    /// The device's notifications are all counted: each experiment it took part in closes its
    /// device (the unit of the inverse-propensity variances).
    mutating func endDevice() {
        for id in experimentsOfTheDevice { experiments[id]?.endDevice() }
        experimentsOfTheDevice.removeAll(keepingCapacity: true)
    }
}

extension CategoryReplay {
    init(name: String) {
        self.init(name: name, recorded: RichShare(), strategyThatRan: RichShare(), replayed: RichShare())
    }

    /// `strategyThatRan` is nil when the strategy that ran is unknown.
    mutating func add(recorded isRecordedRich: Bool, strategyThatRan isRanRich: Bool?, replayed isReplayedRich: Bool) {
        recorded.add(rich: isRecordedRich)
        if let isRanRich { strategyThatRan.add(rich: isRanRich) }
        replayed.add(rich: isReplayedRich)
    }
}

extension RichShare {
    mutating func add(rich isRich: Bool) {
        deliveries += 1
        if isRich { rich += 1 }
    }
}
