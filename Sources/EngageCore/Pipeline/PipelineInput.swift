/// Everything the model knows about one push arriving on one device.
public struct PipelineInput: Sendable, Equatable {
    /// The variants the server offered (`sent.media`), in payload order.
    public let media: [MediaVariant]
    /// Which offered variant plays which part, worked out once from `media`.
    public let roles: MediaRoles
    /// The device's network when the push arrives.
    public var network: NetworkProfile
    /// What the device already holds in its cache.
    public var cache: CacheState

    public init(media: [MediaVariant], network: NetworkProfile, cache: CacheState = .empty) {
        self.media = media
        self.roles = MediaRoles(media)
        self.network = network
        self.cache = cache
    }

    public init(sent: SentDetails, network: NetworkProfile, cache: CacheState = .empty) {
        self.init(media: sent.media, network: network, cache: cache)
    }

    /// Whether the variant at `index` can be read from the cache: cached and younger than the TTL.
    public func isCacheHit(_ index: Int, limits: PipelineLimits) -> Bool {
        cache.variants.contains(index) && cache.ageSeconds <= limits.cacheTTLSeconds
    }
}

/// The parts an offered variant can play, as indices into `PipelineInput.media`.
///
/// Variant names are free text; these rules read the usual ones and fall back on sizes:
/// - original: the first variant named `original`; else the largest variant not named
///   `thumbnail` or `poster`; else the largest variant.
/// - thumbnail: the first variant named `thumbnail`; else the smallest variant, other than the
///   original and not named `poster`, that is smaller than the original.
/// - poster: the first variant named `poster`; else, when the original is a video, the first
///   image or GIF variant that is not the thumbnail.
public struct MediaRoles: Sendable, Hashable {
    public var original: Int?
    public var thumbnail: Int?
    public var poster: Int?

    public init(original: Int?, thumbnail: Int?, poster: Int?) {
        self.original = original
        self.thumbnail = thumbnail
        self.poster = poster
    }

    public init(_ media: [MediaVariant]) {
        func firstNamed(_ name: String) -> Int? { media.firstIndex { $0.variant == name } }
        func isSpecial(_ v: MediaVariant) -> Bool { v.variant == "thumbnail" || v.variant == "poster" }
        func largest(where keep: (MediaVariant) -> Bool) -> Int? {
            var best: Int?
            for i in media.indices where keep(media[i]) {
                if best == nil || media[i].bytes > media[best!].bytes { best = i }
            }
            return best
        }

        let original = firstNamed("original") ?? largest { !isSpecial($0) } ?? largest { _ in true }
        var thumbnail = firstNamed("thumbnail")
        if thumbnail == nil, let original {
            for i in media.indices where i != original && media[i].variant != "poster"
                && media[i].bytes < media[original].bytes {
                if thumbnail == nil || media[i].bytes < media[thumbnail!].bytes { thumbnail = i }
            }
        }
        var poster = firstNamed("poster")
        if poster == nil, let original, media[original].kind == .video {
            poster = media.indices.first { i in
                i != thumbnail && (media[i].kind == .image || media[i].kind == .gif)
            }
        }
        self.init(original: original, thumbnail: thumbnail, poster: poster)
    }
}

/// What the device's cache holds of this push's media, e.g. because the app prefetched it.
public struct CacheState: Sendable, Hashable {
    /// The cached variants, by index into `PipelineInput.media`.
    public var variants: VariantSet
    /// Age of the cached copies in seconds; they are used only within `PipelineLimits.cacheTTLSeconds`.
    public var ageSeconds: Int

    public init(variants: VariantSet, ageSeconds: Int) {
        self.variants = variants
        self.ageSeconds = ageSeconds
    }

    /// Nothing cached.
    public static let empty = CacheState(variants: VariantSet(), ageSeconds: 0)

    /// The variants of `media` with the given names are cached.
    public init(cachedNames names: [String], in media: [MediaVariant], ageSeconds: Int) {
        self.init(variants: VariantSet(media.indices.filter { names.contains(media[$0].variant) }),
                  ageSeconds: ageSeconds)
    }
}

/// A set of variant indices below 64, as one bit each.
public struct VariantSet: Sendable, Hashable {
    public var rawValue: UInt64

    public init(rawValue: UInt64 = 0) {
        self.rawValue = rawValue
    }

    public init(_ indices: some Sequence<Int>) {
        self.init()
        for index in indices { insert(index) }
    }

    public static let capacity = 64

    public func contains(_ index: Int) -> Bool {
        index >= 0 && index < VariantSet.capacity && rawValue & (1 << UInt64(index)) != 0
    }

    public mutating func insert(_ index: Int) {
        precondition(index >= 0 && index < VariantSet.capacity, "variant index out of range")
        rawValue |= 1 << UInt64(index)
    }

    public var isEmpty: Bool { rawValue == 0 }
}
