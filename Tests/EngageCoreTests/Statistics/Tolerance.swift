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
