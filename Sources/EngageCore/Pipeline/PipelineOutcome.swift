/// What the extension handed to the system for one push, as the model predicts it.
public struct PipelineOutcome: Sendable, Hashable {
    /// `rich` exactly when the outcome is `attached`.
    public var presentation: Presentation
    public var outcome: DeliveryOutcome
    /// Why the push was shown plain although a variant was chosen; nil when attached and when the
    /// strategy chose nothing (including when the push offered no media).
    public var failure: PipelineFailure?
    /// Milliseconds from launch until the content (rich or fallback) was handed over.
    public var handoffMS: Int
    /// Bytes received over the network (a part of the variant when the download was cut off).
    public var bytesTransferred: Int
    /// The variant the strategy chose, by index into `PipelineInput.media`.
    public var variantIndex: Int?
    /// Where the variant was read from; nil when none was chosen.
    public var source: MediaSource?
    /// Milliseconds spent getting the variant (download or cache read) until it completed or was
    /// abandoned; nil when none was chosen or the network was unavailable.
    public var downloadMS: Int?
    /// The system's deadline passed, so `serviceExtensionTimeWillExpire` handed over the fallback.
    public var timeWillExpire: Bool

    public init(presentation: Presentation, outcome: DeliveryOutcome, failure: PipelineFailure?,
                handoffMS: Int, bytesTransferred: Int, variantIndex: Int?, source: MediaSource?,
                downloadMS: Int?, timeWillExpire: Bool) {
        self.presentation = presentation
        self.outcome = outcome
        self.failure = failure
        self.handoffMS = handoffMS
        self.bytesTransferred = bytesTransferred
        self.variantIndex = variantIndex
        self.source = source
        self.downloadMS = downloadMS
        self.timeWillExpire = timeWillExpire
    }

    /// The variant used, looked up in the input the outcome was computed from.
    public func variant(in input: PipelineInput) -> MediaVariant? {
        variantIndex.map { input.media[$0] }
    }

    /// The `delivered` event a device would record for this outcome. The attachment's kind is the
    /// variant's when attached and `none` otherwise; format, bytes (the variant's size), source,
    /// download time and variant name describe the variant attempted, when there was one.
    public func deliveredDetails(for input: PipelineInput, network: NetworkType?,
                                 strategy: AttachmentStrategy?) -> DeliveredDetails {
        var attachment = DeliveredAttachment(kind: .noAttachment)
        if let variant = variant(in: input) {
            if outcome == .attached { attachment.kind = variant.kind }
            attachment.format = variant.format
            attachment.bytes = variant.bytes
            attachment.source = source
            attachment.downloadMS = downloadMS
            attachment.variant = variant.variant
        }
        return DeliveredDetails(attachment: attachment, outcome: outcome, processingMS: handoffMS,
                                timeWillExpire: timeWillExpire, network: network, strategy: strategy)
    }
}

/// Why a wanted attachment did not happen. Raw values are stable codes.
public enum PipelineFailure: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// The device could not download at all (`download_failed`).
    case networkUnavailable = "network_unavailable"
    /// The download brought no bytes: the extension takes an empty body for a failed download
    /// (`download_failed`), whatever its headers say.
    case emptyMedia = "empty_media"
    /// The extension's own download timeout fired before the deadline (`timeout`).
    case downloadTimedOut = "download_timed_out"
    /// The media was not ready by the deadline; the system's expiry handed over plain content
    /// (`timeout`, `timeWillExpire`).
    case deadlineExpired = "deadline_expired"
    /// The format is not accepted for the variant's kind (`unsupported_format`).
    case unsupportedFormat = "unsupported_format"
    /// The file exceeds the system's size cap for its kind (`too_large`).
    case exceedsSizeCap = "exceeds_size_cap"
    /// Attaching would exceed the extension's memory limit (`too_large`).
    case exceedsMemoryLimit = "exceeds_memory_limit"

    /// The recorded outcome this failure produces.
    public var outcome: DeliveryOutcome {
        switch self {
        case .networkUnavailable, .emptyMedia: .downloadFailed
        case .downloadTimedOut, .deadlineExpired: .timeout
        case .unsupportedFormat: .unsupportedFormat
        case .exceedsSizeCap, .exceedsMemoryLimit: .tooLarge
        }
    }

    public var description: String {
        switch self {
        case .networkUnavailable: "the network was unavailable"
        case .emptyMedia: "the download brought no bytes"
        case .downloadTimedOut: "the download timed out"
        case .deadlineExpired: "the media was not ready before the deadline"
        case .unsupportedFormat: "the format is not supported for the media kind"
        case .exceedsSizeCap: "the file exceeds the size cap for its kind"
        case .exceedsMemoryLimit: "attaching would exceed the memory limit"
        }
    }
}
