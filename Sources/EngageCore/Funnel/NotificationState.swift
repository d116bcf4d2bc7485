/// Everything the events of one notification (one stream: app + `notification_id`) say about it.
///
/// Events come from the notification service extension and from the app in separate batches, in
/// any order, and may be delivered more than once. The fold is therefore a join-semilattice: every
/// field merges by an operation that is associative, commutative and idempotent, so any order and
/// any duplication of the same events give the same state, and states folded from separate batches
/// `merge` into the state of all their events.
///
/// - Flags are first times (`expandedAt`, `openedAt`, ...): nil, or the minimum over the events.
/// - Sets (`customActionIDs`, `eventIDs`) merge by union and are kept sorted.
/// - Facts a single event reports and two events could disagree on (two `displayed` events with
///   different presentations, two `delivered` events, the experiment tag, the category) come from
///   one event, the least in the *event order*: earliest `occurred_at`, ties broken by the smaller
///   `event_id`. The order depends only on the events, never on arrival.
///
/// An event ID names one event (ingestion's idempotency key): two events with the same ID are
/// assumed to be identical.
///
/// `Hashable` hashes the event IDs only, which equal states share.
public struct NotificationState: Sendable, Equatable, Hashable {
    /// The IDs of the distinct events folded, ascending.
    public internal(set) var eventIDs: [EventID] = []
    /// Category and device of the first event in event order.
    var origin: Origin?
    /// The first `sent` event.
    public internal(set) var sent: SentFacts?
    /// The first `delivered` event.
    public internal(set) var delivered: DeliveredFacts?
    /// The first `displayed` event.
    public internal(set) var displayed: DisplayedFacts?
    /// The first event that carries an experiment tag.
    var tagged: TaggedExperiment?
    /// The first `expanded` event.
    public internal(set) var expandedAt: Timestamp?
    /// The first action on an app-defined button (neither open nor dismiss).
    public internal(set) var customActionAt: Timestamp?
    /// The IDs of the app-defined actions taken, ascending, without repeats.
    public internal(set) var customActionIDs: [String] = []
    /// The first default action: the user tapped the notification.
    public internal(set) var openedAt: Timestamp?
    /// The first dismiss action.
    public internal(set) var dismissedAt: Timestamp?
    /// The first action with a `text_input_length`: the user replied through a text input action.
    public internal(set) var repliedAt: Timestamp?

    /// The state of no events, the identity of `merge`.
    public init() {}

    /// The state of one event.
    public init(_ event: Event) {
        self.init()
        apply(event)
    }

    /// The state of `events`, in any order and with any repeats.
    public init<Events: Sequence<Event>>(folding events: Events) {
        self.init()
        for event in events { apply(event) }
    }

    /// `merge(NotificationState(event))` in place: a fold applies every event of the log, and a
    /// state of one event is two arrays to allocate and merge.
    public mutating func apply(_ event: Event) {
        let at = event.occurredAt
        let id = event.eventID
        insertSorted(id, into: &eventIDs)
        origin = .earlier(origin, Origin(at: at, eventID: id, category: event.category, deviceID: event.deviceID))
        if let tag = event.experiment {
            tagged = .earlier(tagged, TaggedExperiment(at: at, eventID: id, tag: tag))
        }
        switch event.details {
        case .sent(let details):
            sent = .earlier(sent, SentFacts(at: at, eventID: id, strategy: details.strategy, media: details.media,
                                            payloadBytes: details.payloadBytes))
        case .delivered(let details):
            let attachment = details.attachment
            delivered = .earlier(delivered, DeliveredFacts(
                at: at, eventID: id, attachmentKind: attachment.kind, format: attachment.format,
                bytes: attachment.bytes, source: attachment.source, downloadMS: attachment.downloadMS,
                variant: attachment.variant, outcome: details.outcome, processingMS: details.processingMS,
                timeWillExpire: details.timeWillExpire, network: details.network, strategy: details.strategy))
        case .displayed(let details):
            displayed = .earlier(displayed, DisplayedFacts(at: at, eventID: id, presentation: details.presentation,
                                                           attachmentKind: details.attachmentKind))
        case .expanded:
            expandedAt = earliest(expandedAt, at)
        case .action(let details):
            if details.isOpen { openedAt = earliest(openedAt, at) }
            if details.isDismiss { dismissedAt = earliest(dismissedAt, at) }
            if details.isCustom {
                customActionAt = earliest(customActionAt, at)
                insertSorted(details.actionID, into: &customActionIDs)
            }
            if details.textInputLength != nil { repliedAt = earliest(repliedAt, at) }
        }
    }

    /// Merges a one-event state on purpose, not `apply`: the tests compare the two paths.
    public func applying(_ event: Event) -> NotificationState {
        merging(NotificationState(event))
    }

    /// The least upper bound of the two states: the state of the events of both.
    public mutating func merge(_ other: NotificationState) {
        eventIDs = sortedUnion(eventIDs, other.eventIDs)
        origin = .earlier(origin, other.origin)
        sent = .earlier(sent, other.sent)
        delivered = .earlier(delivered, other.delivered)
        displayed = .earlier(displayed, other.displayed)
        tagged = .earlier(tagged, other.tagged)
        expandedAt = earliest(expandedAt, other.expandedAt)
        customActionAt = earliest(customActionAt, other.customActionAt)
        customActionIDs = sortedUnion(customActionIDs, other.customActionIDs)
        openedAt = earliest(openedAt, other.openedAt)
        dismissedAt = earliest(dismissedAt, other.dismissedAt)
        repliedAt = earliest(repliedAt, other.repliedAt)
    }

    public func merging(_ other: NotificationState) -> NotificationState {
        var merged = self
        merged.merge(other)
        return merged
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(eventIDs)
    }
}

// MARK: - Reading the state

extension NotificationState {
    /// The number of distinct events folded.
    public var eventCount: Int { eventIDs.count }
    /// True before the first event.
    public var isEmpty: Bool { eventIDs.isEmpty }

    /// The category of the first event (events of one notification normally agree).
    public var category: String? { origin?.category }
    /// The device of the first event.
    public var deviceID: String? { origin?.deviceID }
    /// The earliest `occurred_at` of all events.
    public var firstSeenAt: Timestamp? { origin?.at }
    /// The tag of the first event that carries one.
    public var experiment: ExperimentTag? { tagged?.tag }

    /// From the first `displayed` event; `.unknown` without one (never inferred from `delivered`).
    public var presentation: ObservedPresentation {
        ObservedPresentation(displayed?.presentation)
    }

    /// The kind shown, from the first `displayed` event, else the kind the extension attached.
    public var attachmentKind: AttachmentKind? {
        displayed?.attachmentKind ?? delivered?.attachmentKind
    }

    public var isSent: Bool { sent != nil }
    public var isDelivered: Bool { delivered != nil }
    public var isDisplayed: Bool { displayed != nil }
    public var isExpanded: Bool { expandedAt != nil }
    /// Some app-defined action was taken.
    public var isActioned: Bool { customActionAt != nil }
    public var isOpened: Bool { openedAt != nil }
    public var isDismissed: Bool { dismissedAt != nil }
    public var isReplied: Bool { repliedAt != nil }
}

/// How a notification was presented, as far as its events tell.
public enum ObservedPresentation: String, Sendable, Hashable, CaseIterable {
    case rich, plain
    /// No `displayed` event (yet).
    case unknown
}

extension ObservedPresentation {
    /// The presentation a `displayed` event reported; `.unknown` without one.
    public init(_ presentation: Presentation?) {
        switch presentation {
        case .rich: self = .rich
        case .plain: self = .plain
        case nil: self = .unknown
        }
    }
}

// MARK: - Facts from one event

/// The first `sent` event: the variants the server offered and how it meant to attach them.
public struct SentFacts: Sendable, Equatable {
    public var at: Timestamp
    public var eventID: EventID
    public var strategy: AttachmentStrategy?
    public var media: [MediaVariant]
    public var payloadBytes: Int?
}

/// The first `delivered` event: what the notification service extension did.
public struct DeliveredFacts: Sendable, Hashable {
    public var at: Timestamp
    public var eventID: EventID
    public var attachmentKind: AttachmentKind
    public var format: MediaFormat?
    public var bytes: Int?
    public var source: MediaSource?
    public var downloadMS: Int?
    public var variant: String?
    public var outcome: DeliveryOutcome
    public var processingMS: Int
    public var timeWillExpire: Bool
    public var network: NetworkType?
    public var strategy: AttachmentStrategy?
}

/// The first `displayed` event.
public struct DisplayedFacts: Sendable, Hashable {
    public var at: Timestamp
    public var eventID: EventID
    public var presentation: Presentation
    public var attachmentKind: AttachmentKind
}

struct Origin: Sendable, Hashable {
    var at: Timestamp
    var eventID: EventID
    var category: String
    var deviceID: String
}

struct TaggedExperiment: Sendable, Equatable {
    var at: Timestamp
    var eventID: EventID
    var tag: ExperimentTag
}

// MARK: - Merging

/// Facts taken from one event, which the event order ranks.
protocol FromOneEvent {
    var at: Timestamp { get }
    var eventID: EventID { get }
}

extension FromOneEvent {
    /// The facts of the earlier event in event order: earliest `at`, then smallest `eventID`.
    static func earlier(_ a: Self?, _ b: Self?) -> Self? {
        guard let a else { return b }
        guard let b else { return a }
        return (b.at, b.eventID) < (a.at, a.eventID) ? b : a
    }
}

extension SentFacts: FromOneEvent {}
extension DeliveredFacts: FromOneEvent {}
extension DisplayedFacts: FromOneEvent {}
extension Origin: FromOneEvent {}
extension TaggedExperiment: FromOneEvent {}

private func earliest(_ a: Timestamp?, _ b: Timestamp?) -> Timestamp? {
    guard let a else { return b }
    guard let b else { return a }
    return min(a, b)
}

/// Adds `element` to an ascending array without repeats, keeping it so (`sortedUnion` with one
/// element, without a new array).
private func insertSorted<Element: Comparable>(_ element: Element, into array: inout [Element]) {
    var low = 0, high = array.count
    while low < high {
        let middle = (low + high) / 2
        if array[middle] < element { low = middle + 1 } else { high = middle }
    }
    if low == array.count || array[low] != element { array.insert(element, at: low) }
}

/// The union of two ascending arrays without repeats, ascending without repeats.
private func sortedUnion<Element: Comparable>(_ a: [Element], _ b: [Element]) -> [Element] {
    if b.isEmpty || a == b { return a }
    if a.isEmpty { return b }
    var out: [Element] = []
    out.reserveCapacity(a.count + b.count)
    var i = 0, j = 0
    while i < a.count && j < b.count {
        if a[i] < b[j] {
            out.append(a[i])
            i += 1
        } else if b[j] < a[i] {
            out.append(b[j])
            j += 1
        } else {
            out.append(a[i])
            i += 1
            j += 1
        }
    }
    out.append(contentsOf: a[i...])
    out.append(contentsOf: b[j...])
    return out
}
