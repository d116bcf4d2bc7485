import EngageCore

/// The server's spellings, and what its decoder reads from an event in wire form.
enum ServerWire {
    static let vocabularies: [WireVocabulary: Set<String>] = [
        .eventType: spellings(EventType.self),
        .attachmentKind: spellings(AttachmentKind.self),
        .mediaFormat: spellings(MediaFormat.self),
        .mediaSource: spellings(MediaSource.self),
        .deliveryOutcome: spellings(DeliveryOutcome.self),
        .presentation: spellings(Presentation.self),
        .attachmentStrategy: spellings(AttachmentStrategy.self),
        .networkType: spellings(NetworkType.self),
        .actionIdentifier: [ActionDetails.openIdentifier, ActionDetails.dismissIdentifier],
    ]

    /// An hour after the samples' `occurred_at`, inside ingestion's time window.
    static let now = Timestamp(rfc3339: "2026-11-29T20:16:23Z")!

    /// The spellings of every vocabulary the server decodes from `json`, or its problem.
    static func decode(_ json: String) -> Result<[WireVocabulary: Set<String>], EventProblem> {
        let event: Event
        do {
            event = try Event.decodeWire(Array(json.utf8), now: now)
        } catch {
            return .failure(error)
        }
        var found: [WireVocabulary: Set<String>] = [.eventType: [event.type.rawValue]]
        func add(_ vocabulary: WireVocabulary, _ value: String?) {
            if let value { found[vocabulary, default: []].insert(value) }
        }
        switch event.details {
        case .sent(let sent):
            add(.attachmentStrategy, sent.strategy?.rawValue)
            for variant in sent.media {
                add(.attachmentKind, variant.kind.rawValue)
                add(.mediaFormat, variant.format.rawValue)
            }
        case .delivered(let delivered):
            add(.attachmentKind, delivered.attachment.kind.rawValue)
            add(.mediaFormat, delivered.attachment.format?.rawValue)
            add(.mediaSource, delivered.attachment.source?.rawValue)
            add(.deliveryOutcome, delivered.outcome.rawValue)
            add(.networkType, delivered.network?.rawValue)
            add(.attachmentStrategy, delivered.strategy?.rawValue)
        case .displayed(let displayed):
            add(.presentation, displayed.presentation.rawValue)
            add(.attachmentKind, displayed.attachmentKind.rawValue)
        case .expanded:
            break
        case .action(let action):
            if action.isOpen || action.isDismiss { add(.actionIdentifier, action.actionID) }
        }
        return .success(found)
    }
}
