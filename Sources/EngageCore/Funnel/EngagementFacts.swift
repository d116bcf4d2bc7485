/// What the engagement read models need of one notification.
public struct EngagementFacts: Sendable, Hashable {
    public var category: String
    public var presentation: ObservedPresentation
    /// The kind shown, else the kind attached, nil when neither is known yet.
    public var attachmentKind: AttachmentKind?
    /// See `NotificationState.day`.
    public var day: UTCDay
    /// See `NotificationState.reachedStages`.
    public var stages: FunnelStageSet
    /// The app-defined actions taken, ascending.
    public var customActionIDs: [String]

    public init(category: String, presentation: ObservedPresentation, attachmentKind: AttachmentKind?,
                day: UTCDay, stages: FunnelStageSet = [.notifications], customActionIDs: [String] = []) {
        self.category = category
        self.presentation = presentation
        self.attachmentKind = attachmentKind
        self.day = day
        self.stages = stages
        self.customActionIDs = customActionIDs
    }
}

extension NotificationState {
    /// The UTC day a notification counts on: the day of the first `delivered` event, else of the
    /// first `displayed` event, else of the earliest event of any type; nil before the first event.
    /// The times are the devices' `occurred_at`. A late event can move the day (a `delivered`
    /// event arriving after the `displayed` one, from just before midnight).
    public var day: UTCDay? {
        guard let at = delivered?.at ?? displayed?.at ?? firstSeenAt else { return nil }
        return UTCDay(at)
    }

    /// Nil before the first event.
    public var engagementFacts: EngagementFacts? {
        guard let category, let day else { return nil }
        return EngagementFacts(category: category, presentation: presentation, attachmentKind: attachmentKind, day: day,
                               stages: reachedStages, customActionIDs: customActionIDs)
    }

    /// The funnel stages the notification reached; empty before the first event.
    public var reachedStages: FunnelStageSet {
        guard !isEmpty else { return [] }
        var engaged = FunnelStageSet()
        if isExpanded { engaged.insert(.expanded) }
        if isActioned { engaged.insert(.actioned) }
        if isOpened { engaged.insert(.opened) }
        if isDismissed { engaged.insert(.dismissed) }
        if isReplied { engaged.insert(.replied) }
        return FunnelStageSet(delivered: isDelivered, presentation: presentation, engaged: engaged)
    }

    /// What the notification adds to the engagement read model; nil before the first event.
    public var engagementContribution: EngagementContribution? {
        engagementFacts.map(EngagementContribution.init)
    }

    /// What the notification adds to the extension telemetry; nil until it was delivered.
    public var telemetryContribution: TelemetryContribution? {
        guard let category, let delivered else { return nil }
        return TelemetryContribution(category: category, delivered: delivered)
    }
}
