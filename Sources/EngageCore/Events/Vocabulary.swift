/// The closed vocabularies of the v1 event schema. Raw values are the wire spellings.
/// Cases spelled `none` on the wire are named `noAttachment` in Swift so that they never read as
/// `Optional.none`.

public enum EventType: String, Sendable, Hashable, CaseIterable {
    case sent, delivered, displayed, expanded, action
}

public enum AttachmentKind: String, Sendable, Hashable, CaseIterable {
    case image, gif, video, audio
    case noAttachment = "none"
}

public enum MediaFormat: String, Sendable, Hashable, CaseIterable {
    case jpeg, png, gif, tiff, mpeg, mp4, mov, mp3, aac, wav, caf, aiff, avi, m4a
}

public enum MediaSource: String, Sendable, Hashable, CaseIterable {
    case network, cache
}

public enum DeliveryOutcome: String, Sendable, Hashable, CaseIterable {
    case attached, timeout
    case tooLarge = "too_large"
    case unsupportedFormat = "unsupported_format"
    case downloadFailed = "download_failed"
    case notRequested = "not_requested"
}

public enum Presentation: String, Sendable, Hashable, CaseIterable {
    case rich, plain
}

public enum AttachmentStrategy: String, Sendable, Hashable, CaseIterable {
    case noAttachment = "none"
    case full, thumbnail, cached, adaptive, poster
}

/// The network the device was on when the notification arrived.
public enum NetworkType: String, Sendable, Hashable, CaseIterable {
    case wifi, cellular, ethernet, offline, unknown
}

extension RawRepresentable where Self: CaseIterable, RawValue == String {
    /// "must be one of a, b, c", the rejection text for an unknown spelling.
    static var mustBeOneOf: String {
        "must be one of " + allCases.map(\.rawValue).joined(separator: ", ")
    }
}
