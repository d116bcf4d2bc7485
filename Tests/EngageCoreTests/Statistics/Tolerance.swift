import Foundation

/// True when `actual` rounds to `expected` at `decimals` places: `|actual - expected| <= 0.5e-decimals`.
func matches(_ actual: Double, _ expected: Double, decimals: Int) -> Bool {
    abs(actual - expected) <= 0.5 * pow(10, -Double(decimals)) * (1 + 1e-9)
}

/// True when `actual` is within `tolerance` of `expected` relative to `expected`'s magnitude.
func matches(_ actual: Double, _ expected: Double, relative tolerance: Double) -> Bool {
    if expected == 0 { return abs(actual) <= tolerance }
    return abs(actual - expected) <= tolerance * abs(expected)
}

/// A small deterministic generator (SplitMix64) so property tests are reproducible.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9e37_79b9_7f4a_7c15
        var z = state
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }
}
