extension MediaVariant {
    /// What identifies one media file across pushes in a replay: the variant without its name.
    ///
    /// `sent` events carry no URL or content hash, only each variant's kind, format, exact byte
    /// size, dimensions and duration; the variant's name (`original`, `thumbnail`) is a role, not
    /// an identity. Two compressed files of the same kind, format, byte count and dimensions are
    /// almost always the same file, so a re-sent image is recognised; the rare collision between
    /// different files makes the replay predict a cache hit that did not happen.
    var cacheIdentity: MediaVariant {
        var identity = self
        identity.variant = ""
        return identity
    }
}

/// The media one device's extension holds, as far as its deliveries show: a file is cached when
/// a delivery downloaded it over the network and attached it (an extension keeps what it
/// attached), and it stays usable for `PipelineLimits.cacheTTLSeconds` after that delivery.
///
/// Media the app prefetched outside the extension leaves no trace in the log and is not known.
struct ReplayMediaCache: Sendable {
    /// When each file was last received, by delivery time.
    private var receivedAt: [MediaVariant: Timestamp] = [:]

    /// Above this many files, expired ones are dropped on the next insertion.
    private static let pruneThreshold = 256

    /// The cache state of a push offering `media` at `time`: the offered variants received within
    /// the TTL, with the age of the oldest of them (so that all of them count as hits).
    func state(for media: [MediaVariant], at time: Timestamp, ttlSeconds: Int) -> CacheState {
        guard !receivedAt.isEmpty else { return .empty }
        var variants = VariantSet()
        var age = 0
        for index in media.indices where index < VariantSet.capacity {
            guard let received = receivedAt[media[index].cacheIdentity] else { continue }
            let seconds = Self.ageSeconds(from: received, to: time)
            guard seconds <= ttlSeconds else { continue }
            variants.insert(index)
            age = max(age, seconds)
        }
        return variants.isEmpty ? .empty : CacheState(variants: variants, ageSeconds: age)
    }

    /// Whether `variant` was received within the TTL before `time`.
    func holds(_ variant: MediaVariant, at time: Timestamp, ttlSeconds: Int) -> Bool {
        guard let received = receivedAt[variant.cacheIdentity] else { return false }
        return Self.ageSeconds(from: received, to: time) <= ttlSeconds
    }

    /// Records that `variant` was received at `time`.
    mutating func receive(_ variant: MediaVariant, at time: Timestamp, ttlSeconds: Int) {
        if receivedAt.count >= Self.pruneThreshold {
            receivedAt = receivedAt.filter { Self.ageSeconds(from: $0.value, to: time) <= ttlSeconds }
        }
        let key = variant.cacheIdentity
        if let previous = receivedAt[key], previous > time { return }
        receivedAt[key] = time
    }

    /// Seconds from `earlier` to `later`, a started second counted whole; 0 when `later` is not
    /// after it (clock skew). Rounded up so that `age <= ttl` holds as the extension's exact
    /// comparison does: 86,400.5 s after keeping a file it has expired (truncated, it was a hit).
    static func ageSeconds(from earlier: Timestamp, to later: Timestamp) -> Int {
        let microseconds = later.microsecondsSinceEpoch - earlier.microsecondsSinceEpoch
        let second = Timestamp.microsecondsPerSecond
        return microseconds <= 0 ? 0 : Int(microseconds / second + (microseconds % second == 0 ? 0 : 1))
    }
}
