/// What a strategy replay counts of the log and its deliveries: accumulated by `ReplayTotals`
/// while the log is read, and reported as they are by `StrategyReplayResult`.
public struct ReplayCounts: Sendable {
    public var events = 0
    public var devices = 0
    /// Notifications counted (in the time window and categories).
    public var notifications = 0
    public var deliveredWithoutSent = 0
    public var sentWithoutDelivery = 0
    /// Counted deliveries whose `delivered` and `sent` name no strategy, or one the catalog lacks:
    /// not in the agreement or `strategyThatRan`.
    public var withoutStrategy = 0
    /// Deliveries read from the cache although the device's history shows no such download
    /// (prefetched by the app, or received before the log starts).
    public var unexplainedCacheReads = 0

    /// The model under the strategy that ran against the recorded outcomes.
    public var agreement = PipelineAgreement.Accumulator()
    public var agreementByStrategy: [AttachmentStrategy: PipelineAgreement.Accumulator] = [:]
    /// What devices recorded.
    public var recorded: DeliveryTally
    /// The model's prediction under the strategy that ran.
    public var strategyThatRan: DeliveryTally
    /// The model's prediction under the replayed strategy.
    public var replayed: DeliveryTally

    init(maximumHandoffMS: Int) {
        recorded = DeliveryTally(maximumMS: maximumHandoffMS, countsBytes: false)
        strategyThatRan = DeliveryTally(maximumMS: maximumHandoffMS, countsBytes: true)
        replayed = DeliveryTally(maximumMS: maximumHandoffMS, countsBytes: true)
    }

    /// Counted deliveries (both `sent` and `delivered` seen).
    public var deliveries: Int { recorded.deliveries }
}
