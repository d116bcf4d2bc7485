/// One event as the experiment analysis reads it: its place in the event order, its experiment
/// tag and the one fact of its type the analysis uses. The replay builds these from a few columns
/// instead of decoding whole payloads, which is most of the cost of replaying millions of events.
public struct ExperimentEventFacts: Sendable, Equatable {
    public var eventID: EventID
    public var occurredAt: Timestamp
    /// The event's experiment tag; nil when it carries none.
    public var arm: ObservedArm?
    public var kind: Kind

    public enum Kind: Sendable, Equatable {
        case sent
        case delivered(processingMS: Int)
        case displayed(Presentation)
        case expanded
        /// `replied`: the action has a `text_input_length`.
        case action(ActionKind, replied: Bool)
    }

    public enum ActionKind: Sendable, Equatable {
        case open, dismiss, custom

        /// The stage the action reaches.
        public var stage: FunnelStage {
            switch self {
            case .open: .opened
            case .dismiss: .dismissed
            case .custom: .actioned
            }
        }
    }

    public init(eventID: EventID, occurredAt: Timestamp, arm: ObservedArm?, kind: Kind) {
        self.eventID = eventID
        self.occurredAt = occurredAt
        self.arm = arm
        self.kind = kind
    }

    /// The facts of a fully decoded event.
    public init(_ event: Event, arms: ExperimentArmIndex) {
        let kind: Kind
        switch event.details {
        case .sent: kind = .sent
        case .delivered(let details): kind = .delivered(processingMS: details.processingMS)
        case .displayed(let details): kind = .displayed(details.presentation)
        case .expanded: kind = .expanded
        case .action(let details):
            kind = .action(details.isOpen ? .open : details.isDismiss ? .dismiss : .custom,
                           replied: details.textInputLength != nil)
        }
        self.init(eventID: event.eventID, occurredAt: event.occurredAt,
                  arm: event.experiment.map { arms.resolve($0) }, kind: kind)
    }
}

extension ExperimentObservation {
    /// Folds one notification's events into its observation by the rules of `NotificationState`
    /// (facts from the first event in event order, flags from any event; any order, any repeats),
    /// keeping only what the observation needs: no arrays, no strings but the origin's.
    public struct Fold: Sendable {
        private var origin: (rank: EventRank, category: String, deviceID: String)?
        private var tagged: (rank: EventRank, arm: ObservedArm)?
        private var delivered: (rank: EventRank, processingMS: Int)?
        private var displayed: (rank: EventRank, presentation: Presentation)?
        /// Expanded, actioned, opened, dismissed, replied: the stages of the events after display.
        private var engaged = FunnelStageSet()

        public init() {}

        /// True before the first event.
        public var isEmpty: Bool { origin == nil }

        /// Adds one event. `origin` gives the event's category and device; it is called only
        /// when this event is the first in event order so far, so the replay builds those strings
        /// about once per notification rather than once per event.
        public mutating func apply(_ event: ExperimentEventFacts,
                                   origin: () throws -> (category: String, deviceID: String)) rethrows {
            let rank = EventRank(at: event.occurredAt, eventID: event.eventID)
            if self.origin.map({ rank < $0.rank }) ?? true {
                let (category, deviceID) = try origin()
                self.origin = (rank, category, deviceID)
            }
            if let arm = event.arm, tagged.map({ rank < $0.rank }) ?? true {
                tagged = (rank, arm)
            }
            switch event.kind {
            case .sent:
                break
            case .delivered(let processingMS):
                if delivered.map({ rank < $0.rank }) ?? true { delivered = (rank, processingMS) }
            case .displayed(let presentation):
                if displayed.map({ rank < $0.rank }) ?? true { displayed = (rank, presentation) }
            case .expanded:
                engaged.insert(.expanded)
            case .action(let kind, let replied):
                engaged.insert(kind.stage)
                if replied { engaged.insert(.replied) }
            }
        }

        /// Nil before the first event.
        public var observation: ExperimentObservation? {
            guard let origin else { return nil }
            let presentation = ObservedPresentation(displayed?.presentation)
            let reached = FunnelStageSet(delivered: delivered != nil, presentation: presentation, engaged: engaged)
            return ExperimentObservation(arm: tagged?.arm ?? .otherExperiment, category: origin.category,
                                         deviceID: origin.deviceID, stages: reached.withinDenominators,
                                         presentation: presentation, processingMS: delivered?.processingMS)
        }
    }
}

/// The event order of `NotificationState`: earliest `occurred_at`, ties broken by the smaller id.
private struct EventRank: Comparable, Sendable {
    var at: Timestamp
    var eventID: EventID

    static func < (a: EventRank, b: EventRank) -> Bool {
        (a.at, a.eventID) < (b.at, b.eventID)
    }
}
