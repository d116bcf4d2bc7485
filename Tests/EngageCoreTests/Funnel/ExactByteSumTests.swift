import EngageCore
import Testing

/// An event may report up to 2^53 bytes: a thousand such events pass Int64. The read model's
/// byte sums are exact (128 bits), so that subtracting a notification that moves gives what a
/// sum without it gives, in any order of batches.
@Suite("Exact byte sums")
struct ExactByteSumTests {
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
