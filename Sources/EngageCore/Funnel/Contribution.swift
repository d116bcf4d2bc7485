/// What one notification adds to a read model: counters in exactly one bucket, the bucket its
/// current state says.
///
/// When a late event changes the state, the projector replaces the old contribution with the new
/// one by applying `difference(from:to:)` to the stored buckets, so each notification is counted
/// once, where it belongs now.
public protocol BucketContribution: Sendable, Hashable {
    associatedtype Bucket: Sendable, Hashable
    associatedtype Counters: Sendable, Hashable, AdditiveArithmetic

    var bucket: Bucket { get }
    var counters: Counters { get }
}

/// Signed counters to add to one bucket.
public struct BucketDelta<Bucket: Sendable & Hashable, Counters: Sendable & Hashable & AdditiveArithmetic>:
    Sendable, Hashable
{
    public var bucket: Bucket
    public var counters: Counters

    public init(bucket: Bucket, counters: Counters) {
        self.bucket = bucket
        self.counters = counters
    }
}

extension BucketContribution {
    public typealias Delta = BucketDelta<Bucket, Counters>

    /// The changes that turn a read model holding `old` into one holding `new` (nil: the
    /// notification is not counted): `old`'s counters subtracted from its bucket, then `new`'s
    /// added to its own; a single change when the bucket stays; none when nothing changes.
    public static func difference(from old: Self?, to new: Self?) -> [Delta] {
        switch (old, new) {
        case (nil, nil):
            return []
        case (let old?, nil):
            return [Delta(bucket: old.bucket, counters: .zero - old.counters)]
        case (nil, let new?):
            return [Delta(bucket: new.bucket, counters: new.counters)]
        case (let old?, let new?):
            guard old.bucket == new.bucket else {
                return [Delta(bucket: old.bucket, counters: .zero - old.counters),
                        Delta(bucket: new.bucket, counters: new.counters)]
            }
            let change = new.counters - old.counters
            return change == .zero ? [] : [Delta(bucket: new.bucket, counters: change)]
        }
    }
}

// MARK: - Engagement

/// A notification's engagement: the stages it reached, counted 0 or 1 in the bucket of its
/// category, presentation, attachment kind and day.
public struct EngagementContribution: BucketContribution {
    public struct Bucket: Sendable, Hashable {
        public var category: String
        public var presentation: ObservedPresentation
        /// Nil: not known yet.
        public var attachmentKind: AttachmentKind?
        public var day: UTCDay

        public init(category: String, presentation: ObservedPresentation, attachmentKind: AttachmentKind?,
                    day: UTCDay) {
            self.category = category
            self.presentation = presentation
            self.attachmentKind = attachmentKind
            self.day = day
        }
    }

    /// In a contribution each count is 0 or 1, in a delta -1, 0 or 1.
    public typealias Counters = EngagementCounts

    public var bucket: Bucket
    public var counters: Counters

    public init(bucket: Bucket, counters: Counters) {
        self.bucket = bucket
        self.counters = counters
    }

    /// The app-defined actions taken, ascending.
    public var actionIDs: [String] { counters.actions.keys.sorted() }

    public init(_ facts: EngagementFacts) {
        bucket = Bucket(category: facts.category, presentation: facts.presentation,
                        attachmentKind: facts.attachmentKind, day: facts.day)
        counters = Counters(
            funnel: FunnelCounts(reached: facts.stages.intersection(.keptPerBucket)),
            actions: Dictionary(facts.customActionIDs.map { ($0, 1) }, uniquingKeysWith: { a, _ in a }))
    }
}

// MARK: - Extension telemetry

/// What the notification service extension did for one delivered notification, in the bucket of
/// its category, attached kind and delivery day.
public struct TelemetryContribution: BucketContribution {
    public struct Bucket: Sendable, Hashable {
        public var category: String
        /// The kind the extension attached (`.noAttachment` when it attached nothing).
        public var attachmentKind: AttachmentKind
        /// The UTC day of the first `delivered` event.
        public var day: UTCDay

        public init(category: String, attachmentKind: AttachmentKind, day: UTCDay) {
            self.category = category
            self.attachmentKind = attachmentKind
            self.day = day
        }
    }

    /// Numbers of delivered notifications, and multisets of durations for histograms.
    public struct Counters: Sendable, Hashable, AdditiveArithmetic {
        public var delivered: Int
        /// Notifications per outcome; outcomes with 0 are left out. The maps are written only by
        /// `init` and `add`, which keep that true: `+` and `add` no longer filter their left side.
        public internal(set) var outcomes: [DeliveryOutcome: Int]
        /// The extension ran out of time (`serviceExtensionTimeWillExpire`).
        public var timeWillExpire: Int
        /// The attachment came from the device's cache.
        public var cacheHits: Int
        /// The attachment was downloaded.
        public var networkFetches: Int
        /// The sum of the attachment sizes reported, and how many notifications reported one.
        /// Exact, in 128 bits: an event may report up to 2^53 bytes, so a thousand of them pass
        /// Int64, and the projector also subtracts (a notification leaving a bucket). A sum held
        /// at a bound would then depend on the order of the batches, and the read model would no
        /// longer equal a rebuild; 2^53 bytes times any number of notifications fits in 128 bits.
        public var bytes: Int128
        public var bytesReported: Int
        /// Download times: milliseconds -> number of notifications; 0 counts are left out.
        public internal(set) var downloadMS: [Int: Int]
        /// Extension running times: milliseconds -> number of notifications; 0 counts are left out.
        public internal(set) var processingMS: [Int: Int]

        public init(delivered: Int = 0, outcomes: [DeliveryOutcome: Int] = [:], timeWillExpire: Int = 0,
                    cacheHits: Int = 0, networkFetches: Int = 0, bytes: Int128 = 0, bytesReported: Int = 0,
                    downloadMS: [Int: Int] = [:], processingMS: [Int: Int] = [:]) {
            self.delivered = delivered
            self.outcomes = withoutZeros(outcomes)
            self.timeWillExpire = timeWillExpire
            self.cacheHits = cacheHits
            self.networkFetches = networkFetches
            self.bytes = bytes
            self.bytesReported = bytesReported
            self.downloadMS = withoutZeros(downloadMS)
            self.processingMS = withoutZeros(processingMS)
        }

        public static let zero = Counters()

        public static func + (a: Counters, b: Counters) -> Counters { combine(a, b, sign: 1) }
        public static func - (a: Counters, b: Counters) -> Counters { combine(a, b, sign: -1) }

        private static func combine(_ a: Counters, _ b: Counters, sign: Int) -> Counters {
            var sum = a
            sum.add(b, sign: sign)
            return sum
        }

        /// `self + sign * other` in place: a batch's sums hold one entry per distinct duration,
        /// which `+=` would copy for every notification added.
        public mutating func add(_ other: Counters, sign: Int = 1) {
            delivered += sign * other.delivered
            addCounts(&outcomes, other.outcomes, sign: sign)
            timeWillExpire += sign * other.timeWillExpire
            cacheHits += sign * other.cacheHits
            networkFetches += sign * other.networkFetches
            bytes += Int128(sign) * other.bytes
            bytesReported += sign * other.bytesReported
            addCounts(&downloadMS, other.downloadMS, sign: sign)
            addCounts(&processingMS, other.processingMS, sign: sign)
        }
    }

    public var bucket: Bucket
    public var counters: Counters

    public init(bucket: Bucket, counters: Counters) {
        self.bucket = bucket
        self.counters = counters
    }

    public init(category: String, delivered: DeliveredFacts) {
        bucket = Bucket(category: category, attachmentKind: delivered.attachmentKind, day: UTCDay(delivered.at))
        counters = Counters(
            delivered: 1, outcomes: [delivered.outcome: 1], timeWillExpire: delivered.timeWillExpire ? 1 : 0,
            cacheHits: delivered.source == .cache ? 1 : 0, networkFetches: delivered.source == .network ? 1 : 0,
            bytes: Int128(delivered.bytes ?? 0), bytesReported: delivered.bytes == nil ? 0 : 1,
            downloadMS: delivered.downloadMS.map { [$0: 1] } ?? [:],
            processingMS: [delivered.processingMS: 1])
    }
}

/// `a + sign * b` key by key, without the keys that come to 0.
func addCounts<Key>(_ a: [Key: Int], _ b: [Key: Int], sign: Int) -> [Key: Int] {
    var sum = a
    addCounts(&sum, b, sign: sign)
    return sum
}

/// `sum += sign * b` key by key, removing the keys that come to 0.
func addCounts<Key>(_ sum: inout [Key: Int], _ b: [Key: Int], sign: Int) {
    for (key, count) in b {
        let total = sum[key, default: 0] + sign * count
        sum[key] = total == 0 ? nil : total
    }
}

/// The counts without those of 0; the same dictionary, not a filtered copy, when none is 0
/// (the common case, one allocation saved per contribution).
func withoutZeros<Key>(_ counts: [Key: Int]) -> [Key: Int] {
    counts.values.contains(0) ? counts.filter { $0.value != 0 } : counts
}
