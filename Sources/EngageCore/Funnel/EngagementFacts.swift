/// What the engagement read models need of one notification.
public struct EngagementFacts: Sendable, Hashable {
    public var category: String
    public var presentation: ObservedPresentation
    /// The kind shown, else the kind attached, nil when neither is known yet.
    public var attachmentKind: AttachmentKind?
    /// See `NotificationState.day`.
    public var day: UTCDay
    public var delivered: Bool
    public var displayed: Bool
    public var expanded: Bool
    /// Some app-defined action was taken.
    public var actioned: Bool
    public var opened: Bool
    public var dismissed: Bool
    public var replied: Bool
    /// The app-defined actions taken, ascending.
    public var customActionIDs: [String]

    public init(category: String, presentation: ObservedPresentation, attachmentKind: AttachmentKind?,
                day: UTCDay, delivered: Bool = false, displayed: Bool = false, expanded: Bool = false,
                actioned: Bool = false, opened: Bool = false, dismissed: Bool = false, replied: Bool = false,
                customActionIDs: [String] = []) {
        self.category = category
        self.presentation = presentation
        self.attachmentKind = attachmentKind
        self.day = day
        self.delivered = delivered
        self.displayed = displayed
        self.expanded = expanded
        self.actioned = actioned
        self.opened = opened
        self.dismissed = dismissed
        self.replied = replied
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
        return EngagementFacts(
            category: category, presentation: presentation, attachmentKind: attachmentKind, day: day,
            delivered: isDelivered, displayed: isDisplayed, expanded: isExpanded, actioned: isActioned,
            opened: isOpened, dismissed: isDismissed, replied: isReplied, customActionIDs: customActionIDs)
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
