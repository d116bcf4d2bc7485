import Foundation
import Testing

/// Checks values against a reference and remembers the largest relative error per quantity, so
/// a test can print the parity figures it asserted.
struct Parity {
    private(set) var worst: [String: Double] = [:]

    mutating func check(_ quantity: String, _ actual: Double, _ expected: Double, relative tolerance: Double,
                        _ context: String = "", sourceLocation: SourceLocation = #_sourceLocation) {
        let scale = max(abs(expected), abs(actual))
        let error = scale == 0 ? 0 : abs(actual - expected) / scale
        worst[quantity] = max(worst[quantity] ?? 0, error)
        #expect(error <= tolerance, "\(quantity) \(context): \(actual) against \(expected)", sourceLocation: sourceLocation)
    }

    /// One line per quantity, largest relative error first.
    var summary: String {
        worst.sorted { $0.value > $1.value }
            .map { "\($0.key): \(String(format: "%.1e", $0.value))" }
            .joined(separator: "\n")
    }
}
