import Foundation

/// A small seeded generator for the simulator: xoshiro256** (Blackman and Vigna) with its state
/// filled by SplitMix64. Every draw is defined here, so a seed gives the same numbers on every
/// platform and Swift version (the standard library's `random(in:using:)` makes no such promise).
public struct SimulationRandom: Sendable {
    private var s0: UInt64
    private var s1: UInt64
    private var s2: UInt64
    private var s3: UInt64

    /// A generator seeded from `seed` through SplitMix64 (never the all-zero state).
    public init(seed: UInt64) {
        var mixer = seed
        s0 = SimulationRandom.splitMix(&mixer)
        s1 = SimulationRandom.splitMix(&mixer)
        s2 = SimulationRandom.splitMix(&mixer)
        s3 = SimulationRandom.splitMix(&mixer)
    }

    /// A generator for one independent stream: the numbers depend on `seed`, `stream` and `index`
    /// only, so the draws for notification 17 never shift when notification 16 draws more.
    public init(seed: UInt64, stream: UInt64, index: UInt64) {
        self.init(seed: SimulationRandom.derive(seed, stream, index))
    }

    /// The next 64 random bits (xoshiro256**).
    public mutating func next() -> UInt64 {
        let result = rotateLeft(s1 &* 5, 7) &* 9
        let t = s1 << 17
        s2 ^= s0
        s3 ^= s1
        s1 ^= s2
        s0 ^= s3
        s2 ^= t
        s3 = rotateLeft(s3, 45)
        return result
    }

    /// Uniform in [0, 1), in steps of 2^-53.
    public mutating func unit() -> Double {
        Double(next() >> 11) * 0x1p-53
    }

    /// True with probability `p` (false for p <= 0, true for p >= 1).
    public mutating func chance(_ p: Double) -> Bool {
        unit() < p
    }

    /// Uniform in 0..<n (n > 0), without modulo bias (Lemire's multiply and reject).
    public mutating func below(_ n: Int) -> Int {
        precondition(n > 0, "the range must not be empty")
        let bound = UInt64(n)
        let threshold = (0 &- bound) % bound
        while true {
            let product = next().multipliedFullWidth(by: bound)
            if product.low >= threshold { return Int(product.high) }
        }
    }

    /// Uniform in `range`.
    public mutating func integer(in range: ClosedRange<Int>) -> Int {
        range.lowerBound + below(range.upperBound - range.lowerBound + 1)
    }

    /// Uniform in [a, b).
    public mutating func uniform(_ a: Double, _ b: Double) -> Double {
        a + (b - a) * unit()
    }

    /// Log-uniform in [a, b] (a > 0): every factor of two between them is equally likely.
    public mutating func logUniform(_ a: Double, _ b: Double) -> Double {
        precondition(a > 0 && b >= a, "log-uniform bounds must be positive and ordered")
        return a * exp(unit() * log(b / a))
    }

    /// Standard normal (Box-Muller, one of the pair).
    public mutating func normal() -> Double {
        let u1 = 1 - unit() // (0, 1]
        let u2 = unit()
        return sqrt(-2 * log(u1)) * cos(2 * Double.pi * u2)
    }

    /// Exponential with the given mean.
    public mutating func exponential(mean: Double) -> Double {
        -mean * log(1 - unit())
    }

    /// The index of a weighted choice; weights must be non-negative with a positive sum.
    public mutating func weighted(_ weights: [Double]) -> Int {
        let total = weights.reduce(0, +)
        precondition(total > 0, "weights must have a positive sum")
        var remaining = unit() * total
        for (i, w) in weights.enumerated() {
            remaining -= w
            if remaining < 0 { return i }
        }
        return weights.lastIndex { $0 > 0 }!
    }

    /// Fisher-Yates shuffle in place.
    public mutating func shuffle<T>(_ items: inout [T]) {
        guard items.count > 1 else { return }
        for i in stride(from: items.count - 1, to: 0, by: -1) {
            items.swapAt(i, below(i + 1))
        }
    }

    /// One SplitMix64 step: advances `state` and returns its mixed value.
    public static func splitMix(_ state: inout UInt64) -> UInt64 {
        state &+= 0x9e37_79b9_7f4a_7c15
        var z = state
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }

    /// A 64-bit value mixed from three, for seeding independent streams.
    public static func derive(_ seed: UInt64, _ stream: UInt64, _ index: UInt64) -> UInt64 {
        var state = seed
        var mixed = splitMix(&state)
        state = mixed ^ stream
        mixed = splitMix(&state)
        state = mixed ^ index
        return splitMix(&state)
    }

    private func rotateLeft(_ x: UInt64, _ k: UInt64) -> UInt64 {
        (x << k) | (x >> (64 - k))
    }
}
