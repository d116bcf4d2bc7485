/// What the system allows a notification service extension, and the fixed costs the model charges.
///
/// Sizes are in bytes with MiB = 1,048,576 bytes; times are in milliseconds from the moment the
/// system launches the extension for a push.
public struct PipelineLimits: Sendable, Equatable {
    /// Time the system gives the extension before it calls `serviceExtensionTimeWillExpire`
    /// and then stops it (about 30 s).
    public var timeBudgetMS: Int
    /// Part of the budget kept for handing over the fallback content: rich content must be ready
    /// by `deadlineMS`, and a delivery still working then falls back to plain.
    public var fallbackMarginMS: Int
    /// Reading the payload, setting up and attaching: charged once, before any media work.
    public var processingOverheadMS: Int
    /// Reading a cached file from the app group container (replaces latency and transfer).
    public var cacheReadMS: Int
    /// The extension's own download timeout, measured from the start of the download: by default
    /// 25 s, the `maxDownload` of the extension engage ships (`ServiceExtensionPolicy`, which
    /// `StrategyAgreementTests` pins to this model); nil for an extension that relies on the
    /// system deadline alone. When it fires first the outcome is `timeout` with
    /// `timeWillExpire == false`.
    public var downloadTimeoutMS: Int?
    /// Memory the extension may use (about 24 MiB); see `memoryFactors`.
    public var memoryLimitBytes: Int
    /// Peak memory of attaching a variant is `bytes * factor` for its kind, which must not exceed
    /// `memoryLimitBytes`. Defaults: images and GIFs 2 (the downloaded data is held in memory and
    /// validated by decoding it, at least as large again), audio and video 0 (download tasks stream
    /// them to disk, so they never occupy the extension's memory).
    public var memoryFactors: PerKind<Double>
    /// Largest file the system accepts as an attachment, per kind (`UNNotificationAttachment`:
    /// images and GIFs 10 MB, audio 5 MB, video 50 MB, decimal).
    public var sizeCapBytes: PerKind<Int>
    /// Which formats the system accepts for each kind.
    public var supportedFormats: SupportedFormats
    /// How long a cached (prefetched) copy stays usable.
    public var cacheTTLSeconds: Int

    public init(timeBudgetMS: Int = 30_000, fallbackMarginMS: Int = 2_000, processingOverheadMS: Int = 50,
                cacheReadMS: Int = 2, downloadTimeoutMS: Int? = 25_000,
                memoryLimitBytes: Int = 24 * PipelineLimits.mebibyte,
                memoryFactors: PerKind<Double> = PerKind(image: 2, gif: 2, video: 0, audio: 0),
                sizeCapBytes: PerKind<Int> = PipelineLimits.appleSizeCaps,
                supportedFormats: SupportedFormats = .apple, cacheTTLSeconds: Int = 86_400) {
        precondition(timeBudgetMS > 0, "time budget must be positive")
        precondition(fallbackMarginMS >= 0 && fallbackMarginMS < timeBudgetMS, "margin must lie in [0, budget)")
        precondition(processingOverheadMS >= 0 && cacheReadMS >= 0, "fixed costs must not be negative")
        precondition((downloadTimeoutMS ?? 0) >= 0, "download timeout must not be negative")
        self.timeBudgetMS = timeBudgetMS
        self.fallbackMarginMS = fallbackMarginMS
        self.processingOverheadMS = processingOverheadMS
        self.cacheReadMS = cacheReadMS
        self.downloadTimeoutMS = downloadTimeoutMS
        self.memoryLimitBytes = memoryLimitBytes
        self.memoryFactors = memoryFactors
        self.sizeCapBytes = sizeCapBytes
        self.supportedFormats = supportedFormats
        self.cacheTTLSeconds = cacheTTLSeconds
    }

    public static let mebibyte = 1_048_576

    /// Apple's attachment limits (image 10 MB, audio 5 MB, video 50 MB) in decimal megabytes,
    /// as the Notification Service Extension applies them (`ServiceExtensionPolicy.appleSizeLimits`):
    /// a model that allowed binary megabytes predicted attached for files of 10,000,001 to
    /// 10,485,760 bytes that the extension refuses.
    public static let appleSizeCaps = PerKind(image: 10_000_000, gif: 10_000_000, video: 50_000_000, audio: 5_000_000)

    /// The moment by which rich content must be ready: `timeBudgetMS - fallbackMarginMS`.
    public var deadlineMS: Int { timeBudgetMS - fallbackMarginMS }
}

/// One value per attachable kind; `AttachmentKind.noAttachment` has none.
public struct PerKind<Value: Sendable & Equatable>: Sendable, Equatable {
    public var image: Value
    public var gif: Value
    public var video: Value
    public var audio: Value

    public init(image: Value, gif: Value, video: Value, audio: Value) {
        self.image = image
        self.gif = gif
        self.video = video
        self.audio = audio
    }

    /// The value for `kind`; nil for `.noAttachment`.
    public subscript(kind: AttachmentKind) -> Value? {
        switch kind {
        case .image: image
        case .gif: gif
        case .video: video
        case .audio: audio
        case .noAttachment: nil
        }
    }

    /// Replaces the value for `kind`; setting `.noAttachment` is a programming error.
    public mutating func set(_ kind: AttachmentKind, _ value: Value) {
        switch kind {
        case .image: image = value
        case .gif: gif = value
        case .video: video = value
        case .audio: audio = value
        case .noAttachment: preconditionFailure("noAttachment has no value")
        }
    }
}

/// The formats accepted for each kind. A variant whose format is not listed for its kind (a video
/// format on an audio variant, a JPEG labelled `gif`, any format on kind `none`) is
/// `unsupported_format`.
public struct SupportedFormats: Sendable, Equatable {
    /// One bit per `MediaFormat`, see `bit(_:)`.
    public var masks: PerKind<UInt16>

    public init(_ formats: PerKind<[MediaFormat]>) {
        func mask(_ list: [MediaFormat]) -> UInt16 { list.reduce(0) { $0 | SupportedFormats.bit($1) } }
        masks = PerKind(image: mask(formats.image), gif: mask(formats.gif),
                        video: mask(formats.video), audio: mask(formats.audio))
    }

    /// What `UNNotificationAttachment` accepts: images JPEG, PNG, GIF, TIFF; GIFs only GIF;
    /// video MPEG, MP4, MOV, AVI; audio MP3, AAC, WAV, CAF, AIFF, MPEG-4 audio and MPEG audio.
    public static let apple = SupportedFormats(PerKind(
        image: [.jpeg, .png, .gif, .tiff],
        gif: [.gif],
        video: [.mpeg, .mp4, .mov, .avi],
        audio: [.mp3, .aac, .wav, .caf, .mpeg, .aiff, .m4a]))

    public func supports(_ format: MediaFormat, for kind: AttachmentKind) -> Bool {
        guard let mask = masks[kind] else { return false }
        return mask & SupportedFormats.bit(format) != 0
    }

    /// A copy that no longer accepts `format` for `kind`.
    public func removing(_ format: MediaFormat, for kind: AttachmentKind) -> SupportedFormats {
        var copy = self
        if let mask = masks[kind] { copy.masks.set(kind, mask & ~SupportedFormats.bit(format)) }
        return copy
    }

    public static func bit(_ format: MediaFormat) -> UInt16 {
        switch format {
        case .jpeg: 1 << 0
        case .png: 1 << 1
        case .gif: 1 << 2
        case .tiff: 1 << 3
        case .mpeg: 1 << 4
        case .mp4: 1 << 5
        case .mov: 1 << 6
        case .mp3: 1 << 7
        case .aac: 1 << 8
        case .wav: 1 << 9
        case .caf: 1 << 10
        case .aiff: 1 << 11
        case .avi: 1 << 12
        case .m4a: 1 << 13
        }
    }
}
