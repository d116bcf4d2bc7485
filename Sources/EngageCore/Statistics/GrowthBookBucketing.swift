/// Deterministic assignment compatible with GrowthBook's SDKs: the same seed, unit id and
/// weights put a unit in the same variation here as in GrowthBook's SDKs (for ASCII ids and seeds;
/// beyond ASCII the SDKs differ among themselves, and this hashes UTF-8 bytes as the Swift one does).
public enum GrowthBookBucketing {
    /// 32-bit FNV-1a over the UTF-8 bytes of `text`: start from the offset basis 0x811c9dc5;
    /// for each byte, xor it in, then multiply by the prime 0x01000193 modulo 2^32.
    public static func fnv1a32(_ text: String) -> UInt32 {
        var hash: UInt32 = 0x811c_9dc5
        for byte in text.utf8 {
            hash ^= UInt32(byte)
            hash = hash &* 0x0100_0193
        }
        return hash
    }

    /// GrowthBook hash version 1: `(fnv1a32(id + seed) % 1000) / 1000`, in [0, 1) in steps
    /// of 0.001. Kept for experiments created with it; it is biased for similar ids.
    public static func hashV1(seed: String, id: String) -> Double {
        Double(fnv1a32(id + seed) % 1000) / 1000
    }

    /// GrowthBook hash version 2: `(fnv1a32(decimal(fnv1a32(seed + id))) % 10000) / 10000`,
    /// in [0, 1) in steps of 0.0001. The inner hash is rendered in base 10 without sign or
    /// padding, as JavaScript's `Number.toString()` does for an unsigned 32-bit value.
    public static func hashV2(seed: String, id: String) -> Double {
        let inner = fnv1a32(seed + id)
        return Double(fnv1a32(String(inner)) % 10000) / 10000
    }

    /// One variation's share of the unit interval, `[start, end)`.
    public struct BucketRange: Hashable, Sendable {
        public let start: Double
        public let end: Double

        public init(start: Double, end: Double) {
            self.start = start
            self.end = end
        }

        /// `start <= n < end`, GrowthBook's `inRange`.
        public func contains(_ n: Double) -> Bool { n >= start && n < end }
    }

    /// GrowthBook's `getBucketRanges`: consecutive ranges, one per weight, each starting where
    /// the previous weight ends and covering `coverage` of its weight, so a lower coverage
    /// excludes units without moving anyone to another variation. Coverage is clamped to
    /// [0, 1]; weights that do not sum to 1 (within 0.01) are replaced by equal weights, as the
    /// SDK does.
    public static func bucketRanges(weights: [Double], coverage: Double = 1.0) -> [BucketRange] {
        // A NaN coverage includes nobody, as NaN ranges do in the SDK.
        let coverage = coverage.isNaN ? 0 : min(1, max(0, coverage))
        let total = weights.reduce(0, +)
        let usable = (0.99...1.01).contains(total)
            ? weights
            : Array(repeating: 1 / Double(weights.count), count: weights.count)
        var cumulative = 0.0
        return usable.map { weight in
            let start = cumulative
            cumulative += weight
            return BucketRange(start: start, end: start + coverage * weight)
        }
    }

    /// GrowthBook's `chooseVariation`: the index of the first range containing the hash `n`,
    /// or nil (the SDK's -1) when the unit falls outside coverage.
    public static func chooseVariation(n: Double, ranges: [BucketRange]) -> Int? {
        ranges.firstIndex { $0.contains(n) }
    }
}
