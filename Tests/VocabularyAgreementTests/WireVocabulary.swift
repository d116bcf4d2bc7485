/// The closed vocabularies of the v1 event schema that the client and the server each spell.
enum WireVocabulary: String, CaseIterable, Sendable {
    case eventType = "event type"
    case attachmentKind = "attachment kind"
    case mediaFormat = "media format"
    case mediaSource = "media source"
    case deliveryOutcome = "delivery outcome"
    case presentation
    case attachmentStrategy = "attachment strategy"
    case networkType = "network type"
    /// The action identifiers iOS reports, which the server reads as open and dismiss.
    case actionIdentifier = "action identifier"
}

/// The wire spellings of a closed vocabulary.
func spellings<Vocabulary: RawRepresentable & CaseIterable>(_: Vocabulary.Type) -> Set<String>
where Vocabulary.RawValue == String {
    Set(Vocabulary.allCases.map(\.rawValue))
}

/// One event in the client's wire form that carries `value` of `vocabulary`.
struct WireSample: Sendable {
    var vocabulary: WireVocabulary
    var value: String
    var json: String
}
