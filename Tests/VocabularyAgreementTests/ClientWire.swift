import EngageClient
import Foundation

/// The client's spellings, and events it encodes with each of them.
enum ClientWire {
    /// One body of each event type. The switch fails to compile when the client gains a type,
    /// so that the new type is added here and compared.
    static let bodies: [EngageEvent.Body] = {
        let bodies: [EngageEvent.Body] = [
            .sent(media: [], strategy: nil, payloadBytes: nil),
            .delivered(attachment: .none, outcome: .notRequested, processingMS: 1, timeWillExpire: false,
                       network: nil, strategy: nil),
            .displayed(presentation: .plain, attachmentKind: .none),
            .expanded,
            .action(actionID: "like", textInputLength: nil),
        ]
        for body in bodies {
            switch body {
            case .sent, .delivered, .displayed, .expanded, .action: break
            }
        }
        return bodies
    }()

    static let vocabularies: [WireVocabulary: Set<String>] = [
        .eventType: Set(bodies.map(\.type)),
        .attachmentKind: spellings(AttachmentKind.self),
        .mediaFormat: spellings(MediaFormat.self),
        .mediaSource: spellings(MediaSource.self),
        .deliveryOutcome: spellings(DeliveryOutcome.self),
        .presentation: spellings(Presentation.self),
        .attachmentStrategy: spellings(AttachmentStrategy.self),
        .networkType: spellings(NetworkType.self),
        .actionIdentifier: [AppleActionIdentifier.open, AppleActionIdentifier.dismiss],
    ]

    /// 2026-11-29T19:16:23Z.
    static let occurredAt = Date(timeIntervalSince1970: 1_795_979_783)

    static func json(_ body: EngageEvent.Body) -> String {
        EngageEvent(eventID: UUID(uuidString: "C84F0D3E-1A29-4B7C-9F56-3E8D2A1B7C64")!, notificationID: "n-1",
                    deviceID: "dev-1", category: "new_photo", occurredAt: occurredAt,
                    experiment: ExperimentArm(id: "exp", arm: "a", probability: 0.5), body: body).json
    }

    /// Every spelling of every vocabulary in an event the client encodes.
    static var samples: [WireSample] {
        var samples: [WireSample] = []
        func add(_ vocabulary: WireVocabulary, _ value: String, _ body: EngageEvent.Body) {
            samples.append(WireSample(vocabulary: vocabulary, value: value, json: json(body)))
        }
        for body in bodies { add(.eventType, body.type, body) }
        for kind in AttachmentKind.allCases {
            add(.attachmentKind, kind.rawValue, .displayed(presentation: .rich, attachmentKind: kind))
        }
        for format in MediaFormat.allCases {
            let variant = MediaVariant(variant: "original", kind: .image, format: format, bytes: 1_000)
            add(.mediaFormat, format.rawValue, .sent(media: [variant], strategy: .full, payloadBytes: 900))
        }
        for source in MediaSource.allCases {
            let attachment = AttachmentTelemetry(kind: .image, format: .jpeg, bytes: 1_000, source: source,
                                                 downloadMS: 20, variant: "original")
            add(.mediaSource, source.rawValue, .delivered(attachment: attachment, outcome: .attached, processingMS: 40,
                                                          timeWillExpire: false, network: .wifi, strategy: .full))
        }
        for outcome in DeliveryOutcome.allCases {
            add(.deliveryOutcome, outcome.rawValue, .delivered(attachment: .none, outcome: outcome, processingMS: 40,
                                                               timeWillExpire: false, network: .wifi, strategy: .full))
        }
        for presentation in Presentation.allCases {
            add(.presentation, presentation.rawValue, .displayed(presentation: presentation, attachmentKind: .image))
        }
        for strategy in AttachmentStrategy.allCases {
            add(.attachmentStrategy, strategy.rawValue, .sent(media: [], strategy: strategy, payloadBytes: nil))
        }
        for network in NetworkType.allCases {
            add(.networkType, network.rawValue, .delivered(attachment: .none, outcome: .notRequested, processingMS: 40,
                                                           timeWillExpire: false, network: network, strategy: nil))
        }
        for identifier in [AppleActionIdentifier.open, AppleActionIdentifier.dismiss] {
            add(.actionIdentifier, identifier, .action(actionID: identifier, textInputLength: nil))
        }
        return samples
    }
}
