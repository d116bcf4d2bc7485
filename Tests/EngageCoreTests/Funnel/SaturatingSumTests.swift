import EngageCore
import Testing

@Suite("Saturating byte sums")
struct SaturatingSumTests {
    @Test(arguments: [
        (1, 2, 3),
        (Int.max - 1, 5, Int.max),
        (Int.max, 1 << 53, Int.max),
        (Int.min + 1, -5, Int.min),
        (10, -3, 7),
    ])
    func sumsStopAtTheEndsOfInt(a: Int, b: Int, expected: Int) {
        #expect(a.saturatingAdding(b) == expected)
    }

    /// The read model's sums are exact: a batch of the largest byte counts passes Int64, and
    /// taking one notification off gives what a sum without it gives.
    @Test func aBatchOfTheLargestByteCountsIsExact() {
        var sum = TelemetryContribution.Counters()
        let one = TelemetryContribution.Counters(delivered: 1, bytes: 1 << 53, bytesReported: 1)
        for _ in 0..<1_100 { sum.add(one) }
        #expect(sum.bytes == Int128(1_100) << 53)
        #expect(sum.delivered == 1_100)
        #expect(sum.bytesReported == 1_100)
        sum.add(one, sign: -1)
        var without = TelemetryContribution.Counters()
        for _ in 0..<1_099 { without.add(one) }
        #expect(sum == without)
    }
}
